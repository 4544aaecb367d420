package claude

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

// unknownOption is how Claude Code's option parser refuses a flag.
var unknownOption = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`unknown option '([^']+)'`) })

// settingsMissing is what it says once every option parsed and it goes to
// read --settings: the probe's point of success.
const settingsMissing = "Settings file not found"

// ProbeFlags puts every flag of the widest launch the plan builds to the
// binary, in the environment and scratch layout that launch would have,
// but without its files: the --settings file does not exist. Claude Code's
// --help leaves some flags it takes unlisted (--max-turns), so the binary's
// option parser is asked instead: it names the first option it does not
// know, or gets as far as the settings file and stops there, before any
// request. The model endpoint is a closed loopback port, should it ever get
// further.
func (Kind) ProbeFlags(ctx context.Context, binary, callerHome, scratch string) ([]string, []string, error) {
	spec := &kind.Spec{Kind: "claude", Prompt: "doctor", Credentials: kind.CredentialsNone, Decisions: "frame", Hermetic: "off",
		Model: "doctor-probe", Effort: "low", MaxTurns: 1, MaxBudgetUSD: "0.01"}
	w := &kind.World{
		Env: map[string]string{"HOME": callerHome}, Scratch: scratch, Binary: binary, Self: filepath.Join(scratch, "metaharness"),
		DecisionSocket: filepath.Join(scratch, "decisions.sock"), CatalogueCopy: filepath.Join(scratch, "catalogue.json"),
		DecisionAddr: "127.0.0.1:9", DecisionToken: "doctor-probe",
		CatalogueTools: []string{"read_file"}, Context: "doctor",
	}
	plan, err := Plan(spec, w)
	if err != nil {
		return nil, nil, err
	}
	// The directories a run makes for every kind (launcher.Run), then the plan's own.
	for _, d := range append([]string{filepath.Join(scratch, "home"), filepath.Join(scratch, "tmp"), plan.Dir}, plan.Dirs...) {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, nil, err
		}
	}
	var checked []string
	for _, a := range plan.Args {
		if a == "--" {
			break
		}
		if strings.HasPrefix(a, "-") {
			checked = append(checked, a)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, plan.Args...)
	cmd.Dir = plan.Dir
	cmd.Env = append(plan.Env, "ANTHROPIC_BASE_URL=http://127.0.0.1:9")
	cmd.WaitDelay = 2 * time.Second
	out, runErr := cmd.CombinedOutput()
	if m := unknownOption().FindSubmatch(out); m != nil {
		return checked, []string{fmt.Sprintf("%s does not take %s, which the launch uses", binary, m[1])}, nil
	}
	if strings.Contains(string(out), settingsMissing) {
		return checked, nil, nil
	}
	first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return checked, []string{fmt.Sprintf("%s did not get as far as the --settings file with the launch's flags (%v): %q", binary, runErr, first)}, nil
}
