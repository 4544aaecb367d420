package kind

import "context"

// FlagProber is a kind whose launch flags can be put to the vendor binary
// without a model, a network or a credential, from the environment a launch
// for callerHome would construct, inside scratch (an empty directory doctor
// removes). It returns the flags it put and one fault per flag (or probe)
// the binary did not take.
type FlagProber interface {
	ProbeFlags(ctx context.Context, binary, callerHome, scratch string) (checked, faults []string, err error)
}

// EnvChecker is a kind with doctor checks of its own that read the caller's
// environment (b10x: the OS secret store --api-key-secret needs).
type EnvChecker interface {
	EnvChecks(ctx context.Context, getenv func(string) string) []Check
}

// Verdict is a check's outcome in doctor's report.
type Verdict string

const (
	OK   Verdict = "ok"
	Warn Verdict = "warn" // not a fault: something doctor could not check, said so
	Fail Verdict = "fail" // a launch now would not be clean
)

// Check is one line of doctor's report, SPEC §3.3's
// `ok|warn|fail <check>: <reason>`.
type Check struct {
	Verdict Verdict
	Name    string
	Reason  string
}

func (c Check) String() string { return string(c.Verdict) + " " + c.Name + ": " + c.Reason }
