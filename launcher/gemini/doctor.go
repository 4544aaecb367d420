package gemini

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/metaharness/metaharness/launcher/kind"
)

// unknownArguments is how Gemini CLI's option parser (yargs, strict)
// refuses a flag.
var unknownArguments = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`Unknown arguments?: ([^\n]+)`) })

// keyMissing is what it says once every option parsed, the settings and
// the admin policy loaded, and it goes to check the key: the probe's point
// of success, before any request.
const keyMissing = "you must specify the GEMINI_API_KEY environment variable"

// ProbeFlags puts every flag of the launch the plan builds to the binary,
// in the environment and scratch layout that launch would have, with its
// settings and admin policy written, but without a key: Gemini CLI parses
// every option and loads its settings and policies, then stops at the
// missing key, before any request. The model endpoint is a closed
// loopback port, should it ever get further.
func (k Kind) ProbeFlags(ctx context.Context, binary, callerHome, scratch string) ([]string, []string, error) {
	spec := &kind.Spec{Kind: "gemini", Prompt: "doctor", Credentials: kind.CredentialsNone, Decisions: "frame", Hermetic: "off",
		Model: "doctor-probe", MaxTurns: 1}
	w := &kind.World{
		Env: map[string]string{"HOME": callerHome}, Scratch: scratch, Binary: binary, Self: filepath.Join(scratch, "metaharness"),
		DecisionSocket: filepath.Join(scratch, "decisions.sock"), Context: "doctor",
	}
	if err := k.Observe(ctx, spec, w); err != nil {
		return nil, nil, err
	}
	plan, err := Plan(spec, w)
	if err != nil {
		return nil, nil, err
	}
	// The directories a run makes for every kind (launcher.Run), then the
	// plan's own and its files.
	for _, d := range append([]string{filepath.Join(scratch, "home"), filepath.Join(scratch, "tmp"), plan.Dir}, plan.Dirs...) {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, nil, err
		}
	}
	for _, f := range plan.Files {
		if err := os.WriteFile(f.Path, []byte(f.Content), os.FileMode(f.Mode)); err != nil {
			return nil, nil, err
		}
	}
	var checked []string
	for _, a := range plan.Args {
		if strings.HasPrefix(a, "-") {
			flag, _, _ := strings.Cut(a, "=")
			checked = append(checked, flag)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, plan.Program, plan.Args...)
	cmd.Dir = plan.Dir
	for _, kv := range plan.Env {
		if !strings.HasPrefix(kv, KeyEnv+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:9")
	cmd.WaitDelay = 2 * time.Second
	out, runErr := cmd.CombinedOutput()
	if m := unknownArguments().FindSubmatch(out); m != nil {
		return checked, []string{fmt.Sprintf("%s does not take %s, which the launch uses", binary, m[1])}, nil
	}
	if strings.Contains(string(out), keyMissing) {
		return checked, nil, nil
	}
	first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return checked, []string{fmt.Sprintf("%s did not get as far as the key check with the launch's flags (%v): %q", binary, runErr, first)}, nil
}
