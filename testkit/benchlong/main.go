// Command benchlong measures a long session end to end: a governed run of
// the stand-in Claude Code (testkit/fakevendor; this program, reached as
// ~/.local/bin/claude) whose script makes about 10,000, 50,000 and 100,000
// events (texts and catalogue tool calls interleaved, each call decided by
// the run and performed by mcp-serve), then `project` and `project --html`
// of each recorded stream. It prints, per size, the stream's bytes beside
// each process's peak RSS (each process's own, read from /proc while
// it runs), so that memory is seen against the
// stream's size, and project's throughput; the run page's size, how long
// `project --html` took to write it, and, where chromium is installed,
// how long headless Chromium took to load and render it
// (testkit/browser). Run it with scripts/bench.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/metaharness/metaharness/testkit/browser"
	"github.com/metaharness/metaharness/testkit/fakevendor"
)

func main() {
	if filepath.Base(os.Args[0]) == "claude" {
		fakevendor.ClaudeMain()
		return
	}
	mh := flag.String("metaharness", "", "the metaharness binary to measure")
	sizes := flag.String("events", "10000,50000,100000", "the sessions' sizes, in events, comma-separated")
	keep := flag.Bool("keep", false, "keep the sessions' directories (their streams, documents and pages) and name them")
	flag.Parse()
	if *mh == "" {
		fail(errors.New("-metaharness is required: the binary to measure (scripts/bench builds one)"))
	}
	self, err := os.Executable()
	if err != nil {
		fail(err)
	}
	root, err := os.MkdirTemp("", "benchlong-")
	if err != nil {
		fail(err)
	}
	if *keep {
		defer fmt.Println("kept:", root)
	} else {
		defer os.RemoveAll(root)
	}
	var rows []row
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 100 {
			fail(fmt.Errorf("-events %q: each size is a number of events, at least 100", s))
		}
		r, err := measure(*mh, self, filepath.Join(root, s), n)
		if err != nil {
			fail(fmt.Errorf("%d events: %w", n, err))
		}
		rows = append(rows, r)
	}
	fmt.Println("long session: the stand-in Claude Code, texts and catalogue tool calls interleaved; peak RSS against the stream's size")
	fmt.Println("   events   stream MB   run: RSS MB   wall s   project: RSS MB   MB/s   project --html: RSS MB   wall s   page MB   chromium: load s")
	for _, r := range rows {
		load := "  (no chromium)"
		if r.loaded > 0 {
			load = fmt.Sprintf("%17.2f", r.loaded.Seconds())
		}
		fmt.Printf("%9d %11.1f %13.1f %8.1f %17.1f %6.1f %24.1f %8.2f %9.2f %s\n", r.events, mb(r.stream), mb(r.runRSS), r.runWall.Seconds(),
			mb(r.projectRSS), mb(r.stream)/r.projectWall.Seconds(), mb(r.pageRSS), r.pageWall.Seconds(), mb(r.page), load)
	}
	if first, last := rows[0], rows[len(rows)-1]; len(rows) > 1 {
		fmt.Printf("largest vs smallest: stream %.1fx; peak RSS run %.2fx, project %.2fx, project --html %.2fx\n",
			float64(last.stream)/float64(first.stream), float64(last.runRSS)/float64(first.runRSS),
			float64(last.projectRSS)/float64(first.projectRSS), float64(last.pageRSS)/float64(first.pageRSS))
	}
}

type row struct {
	events                         int
	stream, page                   int64 // bytes
	runRSS, projectRSS, pageRSS    int64 // bytes
	runWall, projectWall, pageWall time.Duration
	loaded                         time.Duration // chromium's load of the page, 0 without chromium
}

// measure runs one session of about n events and projects its stream.
func measure(mh, self, dir string, n int) (row, error) {
	home, tree := filepath.Join(dir, "home"), filepath.Join(dir, "tree")
	for _, d := range []string{filepath.Join(home, ".local", "bin"), tree} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return row{}, err
		}
	}
	if err := os.Symlink(self, filepath.Join(home, ".local", "bin", "claude")); err != nil {
		return row{}, err
	}
	notes := strings.Repeat("The release ships on Friday; the flaky test is quarantined and main is green.\n", 12)
	contract := "format: metaharness.tool-contract/1\nentries:\n  - {name: fs.read, summary: Read a file., input: {type: object, properties: {path: {type: string}}, required: [path]}, renderings: {mcp: read_file}}\n"
	// A round is two texts (a text and its usage each) and one tool call
	// (requested, decided, its usage and its result): eight events.
	var script strings.Builder
	script.WriteString("init\n")
	for i := range n / 8 {
		fmt.Fprintf(&script, "text Step %d: reading the notes to see when the release ships, then checking which tests still fail on main.\n", i)
		fmt.Fprintf(&script, "tool t%d mcp__metaharness__read_file {\"path\":\"notes.md\"}\n", i)
		fmt.Fprintf(&script, "text Step %d done: the notes say Friday, and the one failing test is the quarantined one.\n", i)
	}
	script.WriteString("result It ships on Friday.\n")
	for name, content := range map[string]string{"notes.md": notes, "tools.yaml": contract, "long.script": script.String()} {
		if err := os.WriteFile(filepath.Join(tree, name), []byte(content), 0o644); err != nil {
			return row{}, err
		}
	}
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8", "METAHARNESS_CACHE=" + filepath.Join(dir, "cache")}
	events := filepath.Join(dir, "events.jsonl")
	run := exec.Command(mh, "run", "claude", "--credentials", "none", "--decisions", "observe", "--catalogue", filepath.Join(tree, "tools.yaml"),
		"--cwd", tree, "--scratch-cwd", "--output", "final", "--events", events, "--statement", filepath.Join(dir, "statement.json"),
		"-p", filepath.Join(tree, "long.script"))
	run.Env = env
	r := row{}
	var err error
	if r.runRSS, r.runWall, err = peakWhileRunning(run); err != nil {
		return r, err
	}
	fi, err := os.Stat(events)
	if err != nil {
		return r, err
	}
	r.stream = fi.Size()
	if r.events, err = countLines(events); err != nil {
		return r, err
	}
	project := exec.Command(mh, "project", events, "--out", filepath.Join(dir, "doc.json"))
	if r.projectRSS, r.projectWall, err = peakWhileRunning(project); err != nil {
		return r, err
	}
	page := filepath.Join(dir, "page.html")
	if r.pageRSS, r.pageWall, err = peakWhileRunning(exec.Command(mh, "project", events, "--html", page)); err != nil {
		return r, err
	}
	if fi, err = os.Stat(page); err != nil {
		return r, err
	}
	r.page = fi.Size()
	if r.loaded, err = load(page, dir); err != nil {
		return r, err
	}
	return r, nil
}

// load is how long headless Chromium takes to open the page and render it
// (to its load event, then a layout of the whole page), 0 when chromium is
// not installed.
func load(page, dir string) (time.Duration, error) {
	bin := browser.Binary()
	if bin == "" {
		return 0, nil
	}
	b, err := browser.Launch(bin, dir)
	if err != nil {
		return 0, err
	}
	defer b.Close()
	start := time.Now()
	p, err := b.Open("file://"+page, browser.Options{})
	if err != nil {
		return 0, err
	}
	var height float64
	if err := p.Eval("document.documentElement.scrollHeight", &height); err != nil {
		return 0, err
	}
	took := time.Since(start)
	if height < 1000 {
		return 0, fmt.Errorf("the page of %s rendered %v pixels high", page, height)
	}
	return took, nil
}

// peakWhileRunning runs cmd and reads its own peak RSS (VmHWM, which only
// grows) from /proc every 5 ms until it exits; the children it starts are
// not counted. (The peak in its exit status is no use: a child started by
// vfork carries its parent's peak, this program's, across the exec.)
func peakWhileRunning(cmd *exec.Cmd) (int64, time.Duration, error) {
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var peak int64
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if hwm := vmHWM(cmd.Process.Pid); hwm > peak {
			peak = hwm
		}
		select {
		case err := <-done:
			if err != nil {
				return 0, 0, fmt.Errorf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out.String())
			}
			return peak, time.Since(start), nil
		case <-tick.C:
		}
	}
}

// vmHWM is a live process's peak resident set, 0 once it is gone.
func vmHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func countLines(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n := 0
	buf := make([]byte, 64<<10)
	for {
		k, err := f.Read(buf)
		n += bytes.Count(buf[:k], []byte("\n"))
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

func mb(b int64) float64 { return float64(b) / 1e6 }

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benchlong:", err)
	os.Exit(1)
}
