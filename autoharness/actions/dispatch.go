package actions

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/metaharness/metaharness/autoharness"
)

// The dispatch Action's inputs, as the environment variables its
// composite action sets from them (input repository-id is
// HARNESS_REPOSITORY_ID, and so on).
const (
	EnvOperation             = "HARNESS_OPERATION"
	EnvURL                   = "HARNESS_URL"
	EnvAPIKey                = "HARNESS_API_KEY"
	EnvRequestTimeoutSeconds = "HARNESS_REQUEST_TIMEOUT_SECONDS"
	EnvRepositoryID          = "HARNESS_REPOSITORY_ID"
	EnvPrompt                = "HARNESS_PROMPT"
	EnvTarget                = "HARNESS_TARGET"
	EnvTimeout               = "HARNESS_TIMEOUT"
	EnvFallbacks             = "HARNESS_FALLBACKS"
	EnvRef                   = "HARNESS_REF"
	EnvConcurrencyID         = "HARNESS_CONCURRENCY_ID"
	EnvMetadata              = "HARNESS_METADATA"
	EnvIdempotencyKey        = "HARNESS_IDEMPOTENCY_KEY"
	EnvSessionDrainID        = "HARNESS_SESSION_DRAIN_ID"
	EnvPollIntervalSeconds   = "HARNESS_POLL_INTERVAL_SECONDS"
	EnvPollTimeoutSeconds    = "HARNESS_POLL_TIMEOUT_SECONDS"
)

// Input is one input of the dispatch Action and the variable it is read
// from.
type Input struct {
	Name, Env string
}

// Inputs are the Action's inputs, in the order it lists them.
var Inputs = []Input{
	{"operation", EnvOperation}, {"server-url", EnvURL}, {"api-key", EnvAPIKey},
	{"request-timeout-seconds", EnvRequestTimeoutSeconds}, {"repository-id", EnvRepositoryID}, {"prompt", EnvPrompt},
	{"target", EnvTarget}, {"timeout", EnvTimeout}, {"fallbacks", EnvFallbacks}, {"ref", EnvRef},
	{"concurrency-id", EnvConcurrencyID}, {"metadata", EnvMetadata}, {"idempotency-key", EnvIdempotencyKey},
	{"session-drain-id", EnvSessionDrainID}, {"poll-interval-seconds", EnvPollIntervalSeconds},
	{"poll-timeout-seconds", EnvPollTimeoutSeconds},
}

// The defaults and bounds of the Action's durations, in seconds.
const (
	DefaultRequestTimeoutSeconds = 30
	DefaultPollIntervalSeconds   = 5
	DefaultPollTimeoutSeconds    = 900
	// maxPollSeconds bounds the wait's inputs at a week, the control
	// plane's own ceiling on a session.
	maxPollSeconds = 604800
)

// operationInputs are the inputs each operation reads beyond the
// operation, the URL, the key and the request timeout. An input another
// operation reads is refused when given, not ignored.
var operationInputs = map[string][]string{
	OperationDispatch:     {EnvRepositoryID, EnvPrompt, EnvTarget, EnvTimeout, EnvFallbacks, EnvRef, EnvConcurrencyID, EnvMetadata},
	OperationStartDrain:   {EnvRepositoryID, EnvIdempotencyKey},
	OperationGetDrain:     {EnvRepositoryID, EnvSessionDrainID},
	OperationReleaseDrain: {EnvRepositoryID, EnvSessionDrainID},
	OperationWaitForDrain: {EnvRepositoryID, EnvSessionDrainID, EnvPollIntervalSeconds, EnvPollTimeoutSeconds},
}

// operationOnly are those inputs, in the order the Action lists them.
var operationOnly = []string{EnvRepositoryID, EnvPrompt, EnvTarget, EnvTimeout, EnvFallbacks, EnvRef, EnvConcurrencyID,
	EnvMetadata, EnvIdempotencyKey, EnvSessionDrainID, EnvPollIntervalSeconds, EnvPollTimeoutSeconds}

// DrainOutcomeError is a wait-for-drain whose drain ended in any status but
// succeeded: the Action fails closed on it, after reporting the drain.
type DrainOutcomeError struct {
	Drain *autoharness.SessionDrain
}

func (e *DrainOutcomeError) Error() string {
	msg := fmt.Sprintf("session drain %s of repository %s ended %s, not succeeded", e.Drain.OperationID, e.Drain.RepositoryID, e.Drain.Status)
	if e.Drain.FailureCode != "" {
		msg += " (failure code " + e.Drain.FailureCode + ")"
	}
	return msg
}

// Run is the dispatch Action: it reads the operation HARNESS_OPERATION
// names (dispatch by default) and its inputs from env, checks every one of
// them before it sends any request, performs the operation over transport
// (nil: http.DefaultTransport) and reports it (WriteOutputs for a session,
// WriteDrainOutputs and the drain's status-url and terminal for a drain,
// and one line on stdout). A refused input is a *DispatchError; a
// wait-for-drain that ends in anything but succeeded a *DrainOutcomeError;
// the control plane's refusals and timeouts are autoharness's errors.
func Run(ctx context.Context, env map[string]string, stdout io.Writer, transport http.RoundTripper) error {
	op := orDefault(trim(env[EnvOperation]), OperationDispatch)
	reads, ok := operationInputs[op]
	if !ok {
		return refuse(CodeInvalidOperation, EnvOperation+" must be one of dispatch, start-drain, get-drain, wait-for-drain, release-drain")
	}
	for _, name := range operationOnly {
		if !slices.Contains(reads, name) && trim(env[name]) != "" {
			return refuse(CodeUnusedInput, fmt.Sprintf("%s is not used by operation %s; leave it empty, or set %s to the operation it is for", name, op, EnvOperation))
		}
	}
	origin, err := ParseHarnessAPIOrigin(env)
	if err != nil {
		return err
	}
	key, err := RequiredEnvironmentValue(env, EnvAPIKey)
	if err != nil {
		return err
	}
	requestTimeout, err := seconds(env, EnvRequestTimeoutSeconds, DefaultRequestTimeoutSeconds, int64(autoharness.MaxRequestTimeout/time.Second))
	if err != nil {
		return err
	}
	repo, err := RequiredEnvironmentValue(env, EnvRepositoryID)
	if err != nil {
		return err
	}
	var act func(context.Context, *autoharness.Client) error
	if op == OperationDispatch {
		act, err = dispatch(env, stdout, repo)
	} else {
		act, err = drain(env, stdout, op, autoharness.RepositoryByID(repo))
	}
	if err != nil {
		return err
	}
	c, err := autoharness.New(autoharness.Options{BaseURL: origin, APIKey: key, RequestTimeout: requestTimeout, Transport: transport})
	if err != nil {
		return err
	}
	return act(ctx, c)
}

// dispatch checks the inputs of a session and returns its creation.
func dispatch(env map[string]string, stdout io.Writer, repo string) (func(context.Context, *autoharness.Client) error, error) {
	prompt, err := RequiredEnvironmentValue(env, EnvPrompt)
	if err != nil {
		return nil, err
	}
	target, err := ParseHarnessTarget(env[EnvTarget], EnvTarget)
	if err != nil {
		return nil, err
	}
	timeout, ok, err := ParseInteger(env[EnvTimeout], EnvTimeout, 1)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, refuse(CodeMissingEnvironmentValue, EnvTimeout+" is required")
	}
	fallbacks, err := ParseHarnessFallbacks(env[EnvFallbacks], EnvFallbacks)
	if err != nil {
		return nil, err
	}
	concurrency, err := ParseConcurrencyID(env[EnvConcurrencyID], ConcurrencyOptions{Optional: true})
	if err != nil {
		return nil, err
	}
	in := autoharness.SessionInput{
		RepositoryID: repo, Prompt: prompt, Target: &target, Fallbacks: fallbacks,
		Timeout: int(timeout), Ref: trim(env[EnvRef]), ConcurrencyID: concurrency,
	}
	if env[EnvMetadata] != "" {
		if in.Metadata, err = ParseMetadata(env[EnvMetadata], EnvMetadata); err != nil {
			return nil, err
		}
	}
	route := append([]autoharness.TargetRef{target}, fallbacks...)
	return func(ctx context.Context, c *autoharness.Client) error {
		s, err := c.CreateSession(ctx, in)
		if err != nil {
			return err
		}
		if err := WriteOutputs(env, stdout, s, route); err != nil {
			return err
		}
		if env["GITHUB_ACTIONS"] != "true" { // there, the ::notice line says it
			verb := map[bool]string{true: "created", false: "reused"}[s.Created]
			_, err = fmt.Fprintf(stdout, "session %s %s %s\n", s.ID, verb, s.URL)
		}
		return err
	}, nil
}

// drain checks the inputs of a drain operation and returns it.
func drain(env map[string]string, stdout io.Writer, op string, repo autoharness.RepositoryRef) (func(context.Context, *autoharness.Client) error, error) {
	var call func(context.Context, *autoharness.Client) (*autoharness.SessionDrain, error)
	if op == OperationStartDrain {
		key := trim(env[EnvIdempotencyKey])
		call = func(ctx context.Context, c *autoharness.Client) (*autoharness.SessionDrain, error) {
			return c.StartSessionDrain(ctx, repo, key)
		}
	} else {
		id, err := RequiredEnvironmentValue(env, EnvSessionDrainID)
		if err != nil {
			return nil, err
		}
		switch op {
		case OperationGetDrain:
			call = func(ctx context.Context, c *autoharness.Client) (*autoharness.SessionDrain, error) {
				return c.GetSessionDrain(ctx, repo, id)
			}
		case OperationReleaseDrain:
			call = func(ctx context.Context, c *autoharness.Client) (*autoharness.SessionDrain, error) {
				return c.ReleaseSessionDrain(ctx, repo, id)
			}
		case OperationWaitForDrain:
			interval, err := seconds(env, EnvPollIntervalSeconds, DefaultPollIntervalSeconds, maxPollSeconds)
			if err != nil {
				return nil, err
			}
			budget, err := seconds(env, EnvPollTimeoutSeconds, DefaultPollTimeoutSeconds, maxPollSeconds)
			if err != nil {
				return nil, err
			}
			call = func(ctx context.Context, c *autoharness.Client) (*autoharness.SessionDrain, error) {
				return c.WaitForSessionDrain(ctx, repo, id, autoharness.WaitOptions{PollInterval: interval, Timeout: budget})
			}
		}
	}
	return func(ctx context.Context, c *autoharness.Client) error {
		d, err := call(ctx, c)
		if err != nil {
			return err
		}
		if err := WriteDrainOutputs(env, d); err != nil {
			return err
		}
		if err := appendTo(env, "GITHUB_OUTPUT", output("status-url", d.StatusURL)+output("terminal", strconv.FormatBool(d.Terminal()))); err != nil {
			return err
		}
		line := fmt.Sprintf("session drain %s of repository %s: %s (queued %d, running %d, cancelled %d)", d.OperationID, d.RepositoryID, d.Status, d.QueuedCount, d.RunningCount, d.CancelledCount)
		if d.FailureCode != "" {
			line += ", failure code " + d.FailureCode
		}
		if _, err := fmt.Fprintln(stdout, line); err != nil {
			return err
		}
		if op == OperationWaitForDrain && d.Status != autoharness.DrainSucceeded {
			return &DrainOutcomeError{Drain: d}
		}
		return nil
	}, nil
}

// seconds reads a positive whole number of seconds of at most most from
// env[name], def when it is empty.
func seconds(env map[string]string, name string, def, most int64) (time.Duration, error) {
	n, ok, err := ParseInteger(env[name], name, 1)
	switch {
	case err != nil:
		return 0, err
	case !ok:
		n = def
	case n > most:
		return 0, refuse(CodeInvalidInteger, fmt.Sprintf("%s must be at most %d", name, most))
	}
	return time.Duration(n) * time.Second, nil
}
