package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
	"github.com/google/go-cmp/cmp"

	"github.com/metaharness/metaharness/frame"
	"github.com/metaharness/metaharness/launcher/kinds"
	"github.com/metaharness/metaharness/record"
)

// readmeSynopses are the README's synopses: each line of a ```sh block
// that begins "metaharness VERB" and the indented lines after it, keyed by
// the verb ("run KIND" for run).
func readmeSynopses(t *testing.T) map[string]string {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, block := range fencedBlocks(string(readme), "sh") {
		key := ""
		for _, line := range strings.Split(block, "\n") {
			if rest, ok := strings.CutPrefix(line, "metaharness "); ok {
				words := strings.Fields(rest)
				key = words[0]
				if key == "run" {
					key += " " + words[1]
				}
				if _, twice := out[key]; twice {
					t.Fatalf("README.md has two synopses of %q", key)
				}
				out[key] = rest
				continue
			}
			if key != "" && strings.HasPrefix(line, " ") {
				out[key] += " " + strings.TrimSpace(line)
				continue
			}
			key = ""
		}
	}
	return out
}

// synopsisFlag is a flag in a synopsis: --name, then (when the synopsis
// spells its values) a|b|c after a space, = or [.
var synopsisFlag = regexp.MustCompile(`(?:^|[\s\[|])(--[a-z][a-z0-9-]*|-p)(?:[ =]\[?([a-z0-9-]+(?:\|[a-z0-9-]+)+))?`)

// flagsIn are the flags a synopsis names, each with the values it spells.
func flagsIn(synopsis string) map[string][]string {
	out := map[string][]string{}
	for _, m := range synopsisFlag.FindAllStringSubmatch(synopsis, -1) {
		name := m[1]
		if name == "-p" {
			name = "--prompt"
		}
		if _, ok := out[name]; !ok {
			out[name] = nil
		}
		if m[2] != "" {
			out[name] = append(out[name], strings.Split(m[2], "|")...)
		}
	}
	return out
}

// verbFlags are a verb's own flags as kong has them, by --name, --help and
// hidden ones left out.
func verbFlags(t *testing.T, verb string) map[string]*kong.Flag {
	t.Helper()
	parser, err := kong.New(&cli{}, vars())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range parser.Model.Children {
		if n.Name != verb {
			continue
		}
		out := map[string]*kong.Flag{}
		for _, f := range n.Flags {
			if !f.Hidden && f.Name != "help" {
				out["--"+f.Name] = f
			}
		}
		return out
	}
	t.Fatalf("no verb %q", verb)
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestHelpMatchesReadme holds every verb's --help to the README: each
// verb's synopsis names exactly its flags (run: each kind's synopsis, with
// the flags the README says that kind refuses, names them all); each value a
// synopsis spells (a|b|c) is in that flag's help, and so is each value of
// an enum flag, which a synopsis spells unless the help says it is not
// built; and a flag with a default says so in its help.
func TestHelpMatchesReadme(t *testing.T) {
	synopses := readmeSynopses(t)
	parser, err := kong.New(&cli{}, vars())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range parser.Model.Children {
		if n.Hidden {
			continue
		}
		verb := n.Name
		flags := verbFlags(t, verb)
		spelled := map[string][]string{} // values the verb's synopses spell, by flag
		if verb == "run" {
			for _, kind := range kinds.Names() {
				syn, ok := synopses["run "+kind]
				if !ok {
					t.Errorf("README.md has no synopsis of run %s", kind)
					continue
				}
				named := flagsIn(syn)
				refused := refusedInReadme(t, kind, flags)
				for name := range flags {
					_, inSyn := named[name]
					whole, isRefused := refused[name]
					switch {
					case inSyn && isRefused && whole:
						t.Errorf("run %s: %s is both in the synopsis and refused", kind, name)
					case !inSyn && !isRefused:
						t.Errorf("run %s: the README's synopsis lacks %s, and does not say run %s refuses it", kind, name, kind)
					}
				}
				for name, values := range named {
					if flags[name] == nil {
						t.Errorf("run %s's synopsis names %s, which run does not have", kind, name)
					}
					spelled[name] = append(spelled[name], values...)
				}
			}
		} else {
			syn, ok := synopses[verb]
			if !ok {
				t.Errorf("README.md has no synopsis of %s", verb)
				continue
			}
			named := flagsIn(syn)
			if d := cmp.Diff(sortedKeys(flags), sortedKeys(named)); d != "" {
				t.Errorf("%s: --help's flags and the README's synopsis disagree (-help +README):\n%s", verb, d)
			}
			spelled = named
		}
		for name, f := range flags {
			for _, v := range spelled[name] {
				if !strings.Contains(f.Help, v) {
					t.Errorf("%s %s: the README spells the value %s, which --help does not mention: %q", verb, name, v, f.Help)
				}
			}
			for _, v := range strings.Split(f.Enum, ",") {
				switch {
				case v == "":
				case !strings.Contains(f.Help, v):
					t.Errorf("%s %s: --help does not mention the value %s: %q", verb, name, v, f.Help)
				case !slices.Contains(spelled[name], v) && !strings.Contains(f.Help, v+" is not built"):
					t.Errorf("%s %s: the value %s is in no synopsis, and --help does not say it is not built", verb, name, v)
				}
			}
			if f.HasDefault && !strings.Contains(f.Help, "default") {
				t.Errorf("%s %s: --help does not state its default (%q)", verb, name, f.Default)
			}
		}
	}
	// The verb table's last column: a verb that needs no model, network or
	// credential says so in its one-line help, and only such a verb does.
	const free = "No model, network or credential."
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z-]+)` \\| .* \\| ([^|]+) \\|$").FindAllStringSubmatch(readmeSection(t, "## Verbs"), -1) {
		for _, n := range parser.Model.Children {
			if n.Name == m[1] && strings.HasPrefix(m[2], "no") != strings.Contains(n.Help, free) {
				t.Errorf("%s: the README's verb table says %q under what it needs, and its help %q", n.Name, m[2], n.Help)
			}
		}
	}
	formats := flagsIn(synopses["project"])["--from"]
	if d := cmp.Diff(kinds.RecordFormats(), formats); d != "" {
		t.Errorf("project --from: the formats project reads and the README's synopsis disagree (-built +README):\n%s", d)
	}
}

// TestDoctorChecksMatchReadme: the checks doctor --help lists are the ones
// the README's verb table names in its doctor row (each as `name` (…)), in
// the same order.
func TestDoctorChecksMatchReadme(t *testing.T) {
	var help, readme []string
	for _, m := range regexp.MustCompile(`(?m)^  ([a-z-]+)  +`).FindAllStringSubmatch((*doctorCmd)(nil).Help(), -1) {
		help = append(help, m[1])
	}
	row := regexp.MustCompile("(?m)^\\| `doctor` \\|.*$").FindString(readmeSection(t, "## Verbs"))
	for _, m := range regexp.MustCompile("`([a-z-]+)` \\(").FindAllStringSubmatch(row, -1) {
		readme = append(readme, m[1])
	}
	if len(help) == 0 {
		t.Fatal("doctor --help lists no checks")
	}
	if d := cmp.Diff(help, readme); d != "" {
		t.Errorf("doctor's checks in --help and in the README's verb table disagree (-help +README):\n%s", d)
	}
}

// refusedInReadme are the flags the README's sentence "Refused on `run
// KIND`, each by name: …" names (the b10x-only flags, when it says so),
// each checked to be refused on that kind by name, exit 2, before anything
// starts; true for a flag refused whatever its value, false for one whose
// named value (`--tool-surface owned`) is.
func refusedInReadme(t *testing.T, kind string, flags map[string]*kong.Flag) map[string]bool {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	prose := strings.Join(strings.Fields(string(readme)), " ")
	m := regexp.MustCompile("Refused on `run " + kind + "`, each by name: (.*?)\\.(?: |$)").FindStringSubmatch(prose)
	if m == nil {
		t.Errorf("README.md does not say which flags run %s refuses (\"Refused on `run %s`, each by name: …\")", kind, kind)
		return nil
	}
	refused := map[string]bool{}
	for _, m := range regexp.MustCompile("`(--[a-z0-9-]+)(?: ([^`]+))?`").FindAllStringSubmatch(m[1], -1) {
		refused[m[1]] = m[2] == ""
		checkRefused(t, kind, m[1], m[2])
	}
	if strings.Contains(m[1], "the b10x-only flags") {
		for name, f := range flags {
			if f.Group != nil && strings.HasPrefix(f.Group.Title, "b10x only") {
				refused[name] = true
				checkRefused(t, kind, name, "")
			}
		}
	}
	return refused
}

// checkRefused runs `run KIND FLAG VALUE` with the least else a run of the
// kind needs, in a HOME with no vendor binary, and wants exit 2 and one
// line naming the flag.
func checkRefused(t *testing.T, kind, name, value string) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	sealed := filepath.Join(dir, "frame.json")
	contract := filepath.Join(dir, "tools.yaml")
	f, err := frame.Seal(frame.Document{
		Workflow: frame.Workflow{ID: "w", Version: "1"}, Node: frame.NodeRef{ID: "n"},
		Step:  record.StepRef{Workflow: "w", State: "n", Index: 1, Attempt: 1},
		Prior: []frame.Fact{}, Obligations: []frame.Requirement{}, Reaching: []frame.Requirement{},
		Next: []frame.NodeRef{}, Handoff: frame.Handoff{Handoff: frame.HandoffNone}, Subjects: frame.SubjectScope{},
		Operations: []frame.Operation{{Op: "file.read"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for p, b := range map[string][]byte{file: []byte("x\n"), sealed: f.Encode(), contract: []byte("format: metaharness.tool-contract/1\nentries: []\n")} {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	samples := map[string]string{
		"--frame": sealed, "--catalogue": contract, "--token-file": file, "--plugin-dir": dir,
		"--hooks": file, "--prices": file, "--driver": file, "--subscription-token-file": file,
		"--substrate": file, "--cgroup-root": dir, "--process-write-subtree": dir,
		"--max-turns": "3", "--max-budget-usd": "1", "--token-fd": "9", "--write-scope": "src/**=allowed",
		"--scope-announce": "silent", "--model-wire": "openai-responses", "--throttle-budget": "5s",
	}
	args := []string{"run", kind, "--credentials", "none", "-p", "hi"}
	if kind == "b10x" {
		args = append(args, "--decisions", "observe", "--model", "m", "--model-endpoint", "http://127.0.0.1:9")
	}
	if value == "" {
		value = samples[name]
	}
	flag := verbFlags(t, "run")[name]
	switch {
	case flag != nil && flag.IsBool():
		args = append(args, name)
	case value == "":
		args = append(args, name, "sample")
	default:
		args = append(args, name, value)
	}
	var stdout, stderr bytes.Buffer
	env := []string{"HOME=" + dir, "PATH=/usr/bin:/bin", "TMPDIR=" + dir, "METAHARNESS_RUNTIME_DIR=" + filepath.Join(dir, "runtime")}
	code := Main(args, strings.NewReader(""), &stdout, &stderr, env)
	line := strings.TrimSuffix(stderr.String(), "\n")
	if code != 2 || strings.Contains(line, "\n") || !strings.Contains(line, name) {
		t.Errorf("the README says run %s refuses %s; %q exited %d with %q, not 2 and one line naming it", kind, name, args, code, stderr.String())
	}
}
