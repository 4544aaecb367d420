package mcpserve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/internal/decide"
)

// Config is the mcp-serve verb's command line.
type Config struct {
	Catalogue       string
	StrictCatalogue bool // refuse an entry no performer performs, instead of a warning
	Workspace       string
	Writable        bool
	AllowPrograms   []string
	HTTP            string // loopback HOST:PORT; "" serves stdio
	DecisionsSocket string // "" decides standalone: allow and record on stderr
	Version         string
	// Observe, when set, wraps the decider every call is put to (the
	// verb's OpenTelemetry export records each call there).
	Observe func(decide.Asker) decide.Asker
}

// Serve runs the mcp-serve verb: checks (every refusal before anything is
// served), then stdio until the input ends, or HTTP until ctx is done. With
// --http it first prints one JSON line on stdout naming the URL.
func Serve(ctx context.Context, cfg Config, stdin io.Reader, stdout, stderr io.Writer) error {
	// Everything the start allocates (the contract read, its tools) stays
	// live for the server's life, so a collection before the server is
	// built frees nothing and costs a thousand entries' start about a
	// quarter of its time; the contract is bounded (MaxContractBytes), and
	// so is what it grows to.
	gc := debug.SetGCPercent(-1)
	defer func() { debug.SetGCPercent(gc) }()
	opts := Options{Workspace: cfg.Workspace, Writable: cfg.Writable, AllowPrograms: cfg.AllowPrograms, Version: cfg.Version}
	if cfg.Catalogue != "" {
		if err := RefuseAllowPrograms(cfg.Catalogue, cfg.AllowPrograms); err != nil {
			return err
		}
		c, err := LoadContract(cfg.Catalogue)
		if err != nil {
			return err
		}
		warnings, err := c.CheckPerformed(cfg.StrictCatalogue)
		if err != nil {
			return err
		}
		for _, w := range warnings {
			fmt.Fprintln(stderr, w)
		}
		opts.Contract = c
	}
	if cfg.DecisionsSocket != "" {
		st, err := os.Stat(cfg.DecisionsSocket)
		if err != nil || st.Mode()&os.ModeSocket == 0 {
			return exit.Refuse(RefuseDecisionsSocketUnusable, "--decisions-socket %s (or $%s) is not a listening unix socket; start the answering side first, or leave it unset to decide standalone", cfg.DecisionsSocket, EnvDecisionsSocket)
		}
		// Dial takes absolute paths only (a run's socket is named from the
		// root); an embedder's relative one is from its own directory.
		abs, _ := filepath.Abs(cfg.DecisionsSocket)
		opts.Asker = decide.Dial(abs)
	} else {
		opts.Asker = RecordingAsker(stderr)
	}
	if cfg.Observe != nil {
		opts.Asker = cfg.Observe(opts.Asker)
	}
	var ln net.Listener
	if cfg.HTTP != "" {
		l, err := ListenLoopback(cfg.HTTP)
		if err != nil {
			return err
		}
		ln = l
		defer ln.Close()
	}
	s, err := NewServer(opts)
	if err != nil {
		return err
	}
	defer s.Close()
	debug.SetGCPercent(gc)
	if ln == nil {
		return s.ServeStdio(ctx, stdin, stdout, stderr)
	}
	line, _ := json.Marshal(map[string]string{"url": "http://" + ln.Addr().String() + "/mcp"})
	if _, err := fmt.Fprintf(stdout, "%s\n", line); err != nil {
		return err
	}
	return s.ServeHTTP(ctx, ln, stderr)
}
