package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"go.uber.org/zap"

	"github.com/metaharness/metaharness/confine"
	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/launcher/kinds"
	"github.com/metaharness/metaharness/loopback"
	"github.com/metaharness/metaharness/telemetry"
)

type loopbackCmd struct {
	Upstream     string   `required:"" placeholder:"URL" help:"The model API root: https (or http on a loopback host), e.g. https://api.anthropic.com. A path prefix is kept."`
	UpstreamAuth string   `name:"upstream-auth" placeholder:"STYLE" default:"x-api-key" help:"How the upstream takes the token: x-api-key (the default; an Anthropic API key), bearer (OpenAI) or x-goog-api-key (the Gemini API)."`
	ChildKey     string   `name:"child-key" placeholder:"MODE" help:"What becomes of the child's key: attach (default: its key is the placeholder, the real token is attached), pass-through (its own key goes upstream unchanged) or none (its key is taken out, nothing attached). Under pass-through and none the child proves it is yours with the placeholder in an X-Metaharness-Run header, and no token source is given."`
	TokenEnv     string   `name:"token-env" placeholder:"NAME" help:"The environment variable holding the upstream's token."`
	TokenFile    string   `name:"token-file" placeholder:"PATH" help:"A file holding the upstream's token (trimmed); re-read after an upstream 401."`
	TokenFD      *int     `name:"token-fd" placeholder:"N" help:"An inherited descriptor (3 or above) carrying the upstream's token: read once to its first newline or end, then closed. The safest source: nothing on disk or in an environment."`
	Listen       string   `placeholder:"HOST:PORT" help:"Loopback address to listen on (default 127.0.0.1:0, an ephemeral port)."`
	Unix         string   `placeholder:"PATH" help:"Listen on this new unix socket instead (Claude Code only)."`
	AllowEgress  []string `name:"allow-egress" sep:"none" placeholder:"HOST" help:"A host (HOST or HOST:PORT) the child may reach through the egress gate; repeatable. None by default."`
	ModelAPI     string   `name:"model-api" placeholder:"API" help:"The model API the upstream speaks: anthropic-messages (Claude Code), openai-responses (Codex) or gemini-generate-content (Gemini CLI). The proxy reads the model's answers (a wire line is printed before the counters) and, unless --allow-path is given, forwards only that API's requests: POST /v1/messages, POST /v1/responses, or POST /v1beta/models/*:streamGenerateContent and :generateContent. Default: none; nothing is read."`
	AllowPath    []string `name:"allow-path" sep:"none" placeholder:"'METHOD /PATH'" help:"A request the proxy forwards with the token, e.g. 'POST /v1/messages' (any query; a * stands for the characters of one path segment); repeatable. Every other one is answered 403. Default: all paths, or the --model-api's own."`
	OTLPEndpoint string   `name:"otlp-endpoint" placeholder:"URL" help:"Export each request (method, path, status, bytes and, with --model-api, the model and token usage) as an OpenTelemetry span to this collector (OTLP; default $OTEL_EXPORTER_OTLP_ENDPOINT, with its _PROTOCOL and _HEADERS); a telemetry line before the counters says what was delivered."`
}

// loopbackStarted is the one line printed once the proxy listens: what an
// embedder hands its child. The placeholder is in it on purpose (the child
// needs it); it appears nowhere else.
type loopbackStarted struct {
	BaseURL string `json:"base_url"`
	// GateURL is the egress gate, on a port of its own (null on a unix
	// socket): what HTTPS_PROXY in Env names.
	GateURL     *string                      `json:"gate_url"`
	Socket      *string                      `json:"socket"`
	Placeholder string                       `json:"placeholder"`
	Env         map[string]map[string]string `json:"env"` // by kind
	// ModelProviders are, by kind, the provider entries a kind's own config
	// needs to reach the proxy (codex's [model_providers] table).
	ModelProviders map[string]modelProvider `json:"model_providers"`
}

type modelProvider struct {
	ID     string `json:"id"`
	Config string `json:"config"`
}

func (c *loopbackCmd) run(e *env) (exit.Code, error) {
	// Signals first: the start line promises that SIGTERM now stops us cleanly.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	out := &lineWriter{enc: json.NewEncoder(e.stdout)}
	x, err := sidecarExport(c.OTLPEndpoint, "loopback", e)
	if err != nil {
		return exit.Refused, err
	}
	var p *loopback.Proxy // set before it serves, so before any record
	paths := c.AllowPath
	if len(paths) == 0 {
		paths = loopback.ModelAPIPaths(c.ModelAPI)
	}
	p, err = loopback.New(loopback.Config{
		Upstream:    c.Upstream,
		Header:      loopback.HeaderStyle(c.UpstreamAuth),
		Credentials: loopback.Credentials(c.ChildKey),
		Token:       loopback.TokenSource{Env: c.TokenEnv, File: c.TokenFile, FD: c.TokenFD},
		Listen:      c.Listen,
		Unix:        c.Unix,
		AllowEgress: c.AllowEgress,
		ModelAPI:    c.ModelAPI,
		AllowPaths:  paths,
		RunID:       fmt.Sprintf("standalone-%d", os.Getpid()),
		Logger:      e.log.Named("loopback"),
		// A quota answer is news the embedder acts on now (it stops its
		// agent rather than sit through the vendor's retries, and cools the
		// account down), so it gets a line of its own as it happens.
		OnRecord: func(rec loopback.Record) {
			if rec.Quota != nil {
				_ = out.encode(map[string]loopback.Record{"upstream_quota": rec})
			}
			if x != nil {
				var head *loopback.Response
				if w := p.Wire(); w != nil {
					if h, ok := w.Head(rec.Start, rec.Method); ok {
						head = &h
					}
				}
				x.Request(rec, head)
			}
		},
		LookupEnv: func(k string) (string, bool) {
			v := e.getenv(k)
			return v, v != ""
		},
	})
	if err != nil {
		return exit.Refused, err
	}
	if c.TokenEnv != "" {
		// Read: now out of this process's environment block too.
		_ = confine.ForgetEnv(c.TokenEnv)
	}
	if err := p.Start(); err != nil {
		return exit.Refused, err
	}
	defer p.Close()

	started := loopbackStarted{BaseURL: p.BaseURL(), Placeholder: p.Placeholder(),
		Env: map[string]map[string]string{}, ModelProviders: map[string]modelProvider{}}
	if s := p.SocketPath(); s != "" {
		started.Socket = &s
	}
	if g := p.GateURL(); g != "" {
		started.GateURL = &g
	}
	// A kind that cannot use this proxy (codex on a unix socket) is left out.
	for _, k := range kinds.All() {
		name := k.Descriptor().Name
		if lc, ok := k.(kind.LoopbackClient); ok {
			if env, err := lc.LoopbackEnv(p); err == nil {
				started.Env[name] = env
			}
		}
		if mp, ok := k.(kind.ModelProvider); ok {
			if id, config, err := mp.LoopbackProvider(p); err == nil {
				started.ModelProviders[name] = modelProvider{ID: id, Config: config}
			}
		}
	}
	if err := out.encode(started); err != nil {
		return exit.Refused, fmt.Errorf("writing the start line to stdout: %w", err)
	}

	<-ctx.Done()
	closeErr := p.Close()
	if w := p.Wire(); w != nil {
		if err := out.encode(map[string]loopback.WireStats{"wire": w.Stats()}); err != nil {
			return exit.Refused, fmt.Errorf("writing the wire line to stdout: %w", err)
		}
	}
	if x != nil {
		if err := out.encode(map[string]telemetry.State{"telemetry": x.Done()}); err != nil {
			return exit.Refused, fmt.Errorf("writing the telemetry line to stdout: %w", err)
		}
	}
	if err := out.encode(map[string]loopback.Counters{"counters": p.Counters()}); err != nil {
		return exit.Refused, fmt.Errorf("writing the counters to stdout: %w", err)
	}
	if closeErr != nil {
		e.log.Warn("loopback proxy shutdown", zap.Error(closeErr))
	}
	return exit.OK, nil
}

// lineWriter writes whole JSON lines to stdout, one at a time: the quota
// lines come from the proxy's handlers.
type lineWriter struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func (w *lineWriter) encode(v any) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.enc.Encode(v)
}
