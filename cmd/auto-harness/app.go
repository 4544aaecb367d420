package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/metaharness/metaharness/autoharness"
	"github.com/metaharness/metaharness/internal/inputfile"
)

// app is one invocation: its world, its global flags and what the
// command declared of itself.
type app struct {
	ctx context.Context
	w   *world
	g   *globals
	// stdinUse names the command's own use of stdin ("api --body-file -"),
	// which --admin-password-stdin cannot share.
	stdinUse string
}

// The bounds of what is read from a file or stdin.
const (
	maxKeyFile  = 64 << 10
	maxPassword = 64 << 10
	maxDocument = 16 << 20
)

// config is the configuration an invocation resolved, before any request.
type config struct {
	baseURL   string
	insecure  bool
	apiKey    string
	admin     bool
	adminUser string
}

// env is a variable of the caller's environment, trimmed; "" is unset.
func (a *app) env(name string) string { return strings.TrimSpace(a.w.env[name]) }

// config resolves the base URL and the identity from the flags and the
// environment, a flag winning over its variable. It reads the key file;
// it never reads stdin nor sends anything.
func (a *app) config() (*config, error) {
	g := a.g
	cfg := &config{insecure: bool(g.AllowInsecureHTTP)}
	switch {
	case g.APIURL != nil:
		cfg.baseURL = strings.TrimSpace(*g.APIURL)
	case a.env("HARNESS_API_URL") != "":
		cfg.baseURL = a.env("HARNESS_API_URL")
	case a.env("HARNESS_API_HTTP") != "":
		cfg.baseURL = a.env("HARNESS_API_HTTP")
	default:
		return nil, usageErrorf("no API base URL configured: set --api-url, or the HARNESS_API_URL environment variable (alias: HARNESS_API_HTTP)")
	}
	if g.AdminPasswordStdin {
		if g.APIKeyFile != nil || a.env("HARNESS_API_KEY") != "" || a.env("HARNESS_API_KEY_FILE") != "" {
			return nil, usageErrorf("--admin-password-stdin cannot be combined with an API key (--api-key-file, HARNESS_API_KEY, or HARNESS_API_KEY_FILE); pick one identity")
		}
		if a.stdinUse != "" {
			return nil, usageErrorf("--admin-password-stdin and %s both need stdin; pass one of them another way", a.stdinUse)
		}
		cfg.admin, cfg.adminUser = true, "admin"
		if g.AdminUsername != nil {
			cfg.adminUser = *g.AdminUsername
		}
		return cfg, nil
	}
	if g.AdminUsername != nil {
		return nil, usageErrorf("--admin-username names the admin --admin-password-stdin logs in as; it means nothing without it")
	}
	switch {
	case g.APIKeyFile != nil:
		return cfg, readKeyFile(cfg, *g.APIKeyFile)
	case a.env("HARNESS_API_KEY") != "":
		cfg.apiKey = a.env("HARNESS_API_KEY")
	case a.env("HARNESS_API_KEY_FILE") != "":
		return cfg, readKeyFile(cfg, a.env("HARNESS_API_KEY_FILE"))
	}
	return cfg, nil
}

// readKeyFile sets cfg's key from the file at path, trimmed.
func readKeyFile(cfg *config, path string) error {
	b, err := inputfile.Read(path, maxKeyFile)
	if err != nil {
		return usageErrorf("could not read the API key file: %v", err)
	}
	if cfg.apiKey = strings.TrimSpace(string(b)); cfg.apiKey == "" {
		return usageErrorf("the API key file %s is empty", path)
	}
	return nil
}

// client resolves the configuration and makes the client: in admin mode
// after checking the transport, reading the password and logging in.
func (a *app) client() (*autoharness.Client, error) {
	cfg, err := a.config()
	if err != nil {
		return nil, err
	}
	return a.connect(cfg)
}

// connect makes cfg's client. A client the library refuses (a key over
// plain http to a host that is not loopback) is a configuration error.
func (a *app) connect(cfg *config) (*autoharness.Client, error) {
	o := autoharness.Options{BaseURL: cfg.baseURL, APIKey: cfg.apiKey, AllowInsecureHTTP: cfg.insecure}
	if cfg.admin {
		cookie, err := a.login(cfg)
		if err != nil {
			return nil, err
		}
		o.Cookie = cookie
	}
	c, err := autoharness.New(o)
	if err != nil {
		return nil, &usageError{msg: err.Error()}
	}
	return c, nil
}

// login checks that the password may travel, reads it from stdin (one
// trailing newline stripped) and logs in once. Neither the password nor
// the cookie nor the answer is ever printed.
func (a *app) login(cfg *config) (string, error) {
	if autoharness.CheckTransport(cfg.baseURL, cfg.insecure) != nil {
		return "", usageErrorf("--admin-password-stdin requires an https API URL (--allow-insecure-http only permits plain HTTP to a loopback host, e.g. http://127.0.0.1 or http://localhost)")
	}
	b, err := readAll(a.w.stdin, maxPassword, "the admin password on stdin")
	if err != nil {
		return "", err
	}
	password := strings.TrimSuffix(string(b), "\n")
	if password == "" {
		return "", usageErrorf("--admin-password-stdin read an empty password from stdin")
	}
	return autoharness.Login(a.ctx, autoharness.Options{BaseURL: cfg.baseURL, AllowInsecureHTTP: cfg.insecure}, cfg.adminUser, password)
}

// readAll reads r whole, refusing more than max bytes.
func readAll(r io.Reader, max int64, what string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, usageErrorf("could not read %s: %v", what, err)
	}
	if int64(len(b)) > max {
		return nil, usageErrorf("%s is longer than %d bytes", what, max)
	}
	return b, nil
}

// readDocument reads the file named by flag's value path, or stdin for "-".
func (a *app) readDocument(flag, path string) ([]byte, error) {
	if path == "-" {
		return readAll(a.w.stdin, maxDocument, flag+" - (stdin)")
	}
	b, err := inputfile.Read(path, maxDocument)
	if err != nil {
		return nil, usageErrorf("could not read %s: %v", flag, err)
	}
	return b, nil
}

// checkID refuses an id that would not name one record in a route: empty,
// or "." and "..", which a server or a proxy may read as the parent.
func checkID(label, id string) error {
	switch id {
	case "":
		return usageErrorf("%s must not be empty", label)
	case ".", "..":
		return usageErrorf("%s must not be %q", label, id)
	}
	return nil
}

// report prints err as one error line on stderr (a refusal's further
// details after it) and returns the exit code it means.
func report(stderr io.Writer, err error) int {
	var usage *usageError
	var refused *autoharness.Error
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &usage):
		fmt.Fprintf(stderr, "error: %s\n", usage.msg)
		return exitRefused
	case errors.Is(err, reported{}):
		return exitFailed
	case errors.As(err, &refused):
		fmt.Fprintf(stderr, "error: %s\n", err)
		if extra := refused.Extra(); extra != nil {
			_ = printJSON(stderr, extra)
		}
		return exitFailed
	}
	fmt.Fprintf(stderr, "error: %s\n", err)
	return exitFailed
}

// printJSON writes raw indented by two spaces, its keys in their order and
// its strings as they were written.
func printJSON(w io.Writer, raw []byte) error {
	var b bytes.Buffer
	if err := json.Indent(&b, bytes.TrimSpace(raw), "", "  "); err != nil {
		return fmt.Errorf("the answer is not JSON: %w", err)
	}
	b.WriteByte('\n')
	_, err := w.Write(b.Bytes())
	return err
}

// printValue writes v as printJSON does, <, > and & as they are.
func printValue(w io.Writer, v any) error {
	b, err := autoharness.Encode(v)
	if err != nil {
		return err
	}
	return printJSON(w, b)
}
