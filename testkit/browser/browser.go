// Package browser opens pages in a real browser for tests: headless
// Chromium (Debian's chromium package), driven over the DevTools protocol
// on a pipe (--remote-debugging-pipe: the commands on the child's fd 3,
// the answers on its fd 4, each message ended by a NUL), so that no port
// is opened and no dependency is added for it. A page is opened from a
// file:// URL; the test reads the rendered DOM through Runtime.evaluate,
// clicks and types through Input, takes screenshots and prints to PDF.
//
// A test that needs it calls Start, which counts it with the real-client
// tests (testkit/vendortest): without chromium, or outside the
// loopback-only namespace, it skips, or fails under
// METAHARNESS_REQUIRE_REAL_CLIENTS=1.
package browser

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/metaharness/metaharness/testkit/vendortest"
)

// Flags are what every launch passes: headless, no sandbox (tests run as
// root), nothing that reaches out on its own (no background networking,
// no component updates, no sync, no QUIC), and a fresh profile per launch.
var Flags = []string{
	"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync",
	"--disable-dev-shm-usage", "--disable-extensions", "--hide-scrollbars", "--mute-audio",
	"--remote-debugging-pipe",
}

// Binary finds chromium on PATH, or "" when it is not installed.
func Binary() string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Browser is one headless Chromium.
type Browser struct {
	cmd    *exec.Cmd
	to     *os.File // its fd 3
	mu     sync.Mutex
	nextID int
	wait   map[int]chan message
	events map[string][]func(json.RawMessage) // by "sessionId method"
	done   chan struct{}
	err    error // why the pipe ended
	stderr *strings.Builder
}

type message struct {
	ID        int             `json:"id,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// Start launches Chromium for t, after checking that it is installed and
// that the test runs inside the loopback-only namespace; the browser and
// its profile go when t ends.
func Start(t testing.TB) *Browser {
	t.Helper()
	vendortest.Record(t)
	bin := Binary()
	if bin == "" {
		vendortest.Unavailable(t, "chromium is not installed (apt-get install chromium; .ci/run does)")
	}
	vendortest.RequireLoopbackOnly(t)
	b, err := Launch(bin, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// Launch starts bin with Flags and a fresh profile under dir.
func Launch(bin, dir string) (*Browser, error) {
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	profile := filepath.Join(dir, "chromium-profile")
	args := append(append([]string{}, Flags...), "--user-data-dir="+profile, "about:blank")
	cmd := exec.Command(bin, args...)
	cmd.ExtraFiles = []*os.File{cmdR, outW}
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, "config"), "XDG_CACHE_HOME="+filepath.Join(dir, "cache"))
	b := &Browser{cmd: cmd, to: cmdW, wait: map[int]chan message{}, events: map[string][]func(json.RawMessage){}, done: make(chan struct{}), stderr: &strings.Builder{}}
	cmd.Stderr = &lockedWriter{b: b.stderr}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	cmdR.Close()
	outW.Close()
	go b.read(outR)
	return b, nil
}

type lockedWriter struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (b *Browser) read(r io.ReadCloser) {
	defer r.Close()
	br := bufio.NewReaderSize(r, 1<<20)
	var err error
	for {
		var raw []byte
		raw, err = br.ReadBytes(0)
		if err != nil {
			break
		}
		var m message
		if json.Unmarshal(raw[:len(raw)-1], &m) != nil {
			continue
		}
		b.mu.Lock()
		if m.ID != 0 {
			if ch, ok := b.wait[m.ID]; ok {
				delete(b.wait, m.ID)
				ch <- m
			}
		} else {
			for _, fn := range b.events[m.SessionID+" "+m.Method] {
				fn(m.Params)
			}
		}
		b.mu.Unlock()
	}
	b.mu.Lock()
	b.err = fmt.Errorf("chromium's DevTools pipe ended (%v)", err)
	b.mu.Unlock()
	close(b.done)
}

// call sends method to the browser (session "") or a page's session and
// waits for its answer.
func (b *Browser) call(session, method string, params any, result any) error {
	if params == nil {
		params = struct{}{}
	}
	p, err := json.Marshal(params)
	if err != nil {
		return err
	}
	ch := make(chan message, 1)
	b.mu.Lock()
	b.nextID++
	id := b.nextID
	b.wait[id] = ch
	b.mu.Unlock()
	raw, _ := json.Marshal(message{ID: id, SessionID: session, Method: method, Params: p})
	if _, err := b.to.Write(append(raw, 0)); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return fmt.Errorf("%s: %s (%d)", method, m.Error.Message, m.Error.Code)
		}
		if result != nil {
			return json.Unmarshal(m.Result, result)
		}
		return nil
	case <-b.done:
		return fmt.Errorf("%s: %v; its stderr:\n%s", method, b.err, b.stderr.String())
	case <-time.After(time.Minute):
		return fmt.Errorf("%s: no answer in a minute", method)
	}
}

// on calls fn with the params of each event method of session; fn runs on
// the reading goroutine and must not call the browser.
func (b *Browser) on(session, method string, fn func(json.RawMessage)) {
	b.mu.Lock()
	b.events[session+" "+method] = append(b.events[session+" "+method], fn)
	b.mu.Unlock()
}

// Close ends the browser.
func (b *Browser) Close() {
	_ = b.call("", "Browser.close", nil, nil)
	b.to.Close()
	exited := make(chan struct{})
	go func() { _ = b.cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = b.cmd.Process.Kill()
		<-exited
	}
}

// Options are how a page is opened.
type Options struct {
	// NoScripts opens the page with JavaScript off, as a reader who
	// turned it off would.
	NoScripts bool
	// Width and Height are the viewport, 1280×900 by default.
	Width, Height int
}

// Page is one tab.
type Page struct {
	b        *Browser
	session  string
	mu       sync.Mutex
	requests []string // every URL the page asked for
	console  []string // console messages and uncaught exceptions
}

// Open opens url in a new tab and waits for it to load.
func (b *Browser) Open(url string, o Options) (*Page, error) {
	if o.Width == 0 {
		o.Width, o.Height = 1280, 900
	}
	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := b.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		return nil, err
	}
	var att struct {
		SessionID string `json:"sessionId"`
	}
	if err := b.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att); err != nil {
		return nil, err
	}
	p := &Page{b: b, session: att.SessionID}
	loaded := make(chan struct{}, 1)
	b.on(p.session, "Page.loadEventFired", func(json.RawMessage) {
		select {
		case loaded <- struct{}{}:
		default:
		}
	})
	b.on(p.session, "Network.requestWillBeSent", func(raw json.RawMessage) {
		var e struct {
			Request struct {
				URL string `json:"url"`
			} `json:"request"`
		}
		_ = json.Unmarshal(raw, &e)
		p.mu.Lock()
		p.requests = append(p.requests, e.Request.URL)
		p.mu.Unlock()
	})
	b.on(p.session, "Runtime.consoleAPICalled", func(raw json.RawMessage) { p.note("console", raw) })
	b.on(p.session, "Runtime.exceptionThrown", func(raw json.RawMessage) { p.note("exception", raw) })
	for _, c := range []struct {
		method string
		params any
	}{
		{"Page.enable", nil}, {"Network.enable", nil}, {"Runtime.enable", nil},
		{"Emulation.setDeviceMetricsOverride", map[string]any{"width": o.Width, "height": o.Height, "deviceScaleFactor": 1, "mobile": false}},
		{"Emulation.setScriptExecutionDisabled", map[string]any{"value": o.NoScripts}},
		{"Page.navigate", map[string]any{"url": url}},
	} {
		if err := b.call(p.session, c.method, c.params, nil); err != nil {
			return nil, err
		}
	}
	select {
	case <-loaded:
	case <-time.After(time.Minute):
		return nil, fmt.Errorf("%s did not load in a minute", url)
	}
	return p, nil
}

func (p *Page) note(what string, raw json.RawMessage) {
	p.mu.Lock()
	p.console = append(p.console, what+": "+string(raw))
	p.mu.Unlock()
}

// Requests are the URLs the page asked for, its own first.
func (p *Page) Requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string{}, p.requests...)
}

// Console is what the page's scripts logged or threw.
func (p *Page) Console() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string{}, p.console...)
}

// Eval evaluates a JavaScript expression in the page (as DevTools does,
// whether or not the page's own scripts may run) and decodes its value,
// which must be JSON, into out.
func (p *Page) Eval(expr string, out any) error {
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Exception *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := p.b.call(p.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, &r); err != nil {
		return err
	}
	if r.Exception != nil {
		return fmt.Errorf("evaluating %q: %s %s", expr, r.Exception.Text, r.Exception.Exception.Description)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(r.Result.Value, out)
}

// Click presses and releases the left button at (x, y), in CSS pixels of
// the viewport, as a pointer does.
func (p *Page) Click(x, y float64) error {
	for _, typ := range []string{"mouseMoved", "mousePressed", "mouseReleased"} {
		params := map[string]any{"type": typ, "x": x, "y": y, "button": "left", "clickCount": 1}
		if typ == "mouseMoved" {
			params["button"] = "none"
		}
		if err := p.b.call(p.session, "Input.dispatchMouseEvent", params, nil); err != nil {
			return err
		}
	}
	return nil
}

// Key presses and releases one key: "Tab", "Enter" or " " (the space
// bar), optionally with shift.
func (p *Page) Key(key string, shift bool) error {
	codes := map[string]struct {
		code string
		vk   int
		text string
	}{"Tab": {"Tab", 9, ""}, "Enter": {"Enter", 13, "\r"}, " ": {"Space", 32, " "}}
	k, ok := codes[key]
	if !ok {
		return fmt.Errorf("no key %q", key)
	}
	mods := 0
	if shift {
		mods = 8
	}
	down := map[string]any{"type": "keyDown", "key": key, "code": k.code, "windowsVirtualKeyCode": k.vk, "modifiers": mods}
	if k.text != "" {
		down["text"] = k.text
	}
	if err := p.b.call(p.session, "Input.dispatchKeyEvent", down, nil); err != nil {
		return err
	}
	return p.b.call(p.session, "Input.dispatchKeyEvent", map[string]any{"type": "keyUp", "key": key, "code": k.code, "windowsVirtualKeyCode": k.vk, "modifiers": mods}, nil)
}

// Screenshot writes a PNG of the whole page (beyond the viewport) to path.
func (p *Page) Screenshot(path string) error {
	var r struct {
		Data string `json:"data"`
	}
	if err := p.b.call(p.session, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true}, &r); err != nil {
		return err
	}
	return writeBase64(path, r.Data)
}

// ScreenshotClip writes a PNG of the region (x, y, w, h) of the page, in
// CSS pixels from its top left, to path.
func (p *Page) ScreenshotClip(path string, x, y, w, h float64) error {
	var r struct {
		Data string `json:"data"`
	}
	clip := map[string]any{"x": x, "y": y, "width": w, "height": h, "scale": 1}
	if err := p.b.call(p.session, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true, "clip": clip}, &r); err != nil {
		return err
	}
	return writeBase64(path, r.Data)
}

// PDF prints the page as a printer would (print media, its own page
// size) and returns the PDF.
func (p *Page) PDF() ([]byte, error) {
	var r struct {
		Data string `json:"data"`
	}
	if err := p.b.call(p.session, "Page.printToPDF", map[string]any{"printBackground": true}, &r); err != nil {
		return nil, err
	}
	return base64.StdEncoding.DecodeString(r.Data)
}

// Media emulates a CSS media type ("print", "screen"; "" for none).
func (p *Page) Media(media string) error {
	return p.b.call(p.session, "Emulation.setEmulatedMedia", map[string]any{"media": media}, nil)
}

func writeBase64(path, data string) error {
	b, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return err
	}
	if len(b) < 8 || string(b[1:4]) != "PNG" {
		return errors.New("the screenshot is not a PNG")
	}
	return os.WriteFile(path, b, 0o644)
}

// EnvArtefacts names the directory tests keep what they made for a person
// to look at (screenshots); unset, metaharness-test-artefacts under the
// temporary directory. Nothing there is committed.
const EnvArtefacts = "METAHARNESS_TEST_ARTEFACTS"

// Artefacts is sub within the artefacts directory, made if need be; the
// test's log names it.
func Artefacts(t testing.TB, sub string) string {
	t.Helper()
	root := os.Getenv(EnvArtefacts)
	if root == "" {
		root = filepath.Join(os.TempDir(), "metaharness-test-artefacts")
	}
	dir := filepath.Join(root, sub)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("artefacts in %s", dir)
	return dir
}
