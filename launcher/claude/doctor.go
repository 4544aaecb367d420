package claude

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/metaharness/metaharness/launcher"
)

var _ launcher.FlagProber = Adapter{}

// unknownOption is how Claude Code's option parser refuses a flag.
var unknownOption = regexp.MustCompile(`unknown option '([^']+)'`)

// settingsMissing is what it says once every option parsed and it goes to
// read --settings: the probe's point of success.
const settingsMissing = "Settings file not found"

// ProbeFlags puts every flag of the widest launch the plan builds to the
// binary, with a --settings file that does not exist. Claude Code's --help
// leaves some flags it takes unlisted (--max-turns), so the binary's option
// parser is asked instead: it names the first option it does not know, or
// gets as far as the settings file and stops there, before any request.
// The model endpoint is a closed loopback port, should it ever get further.
func (Adapter) ProbeFlags(ctx context.Context, binary, childPath string) ([]string, []string, error) {
	dir, err := os.MkdirTemp("", "mh-probe-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	spec := &launcher.Spec{Kind: "claude", Prompt: "doctor", Credentials: "none", Decisions: "frame", Hermetic: "off",
		Model: "doctor-probe", Effort: "low", MaxTurns: 1, MaxBudgetUSD: "0.01"}
	w := &launcher.World{
		Env: map[string]string{}, Scratch: dir, Binary: binary, Self: filepath.Join(dir, "metaharness"),
		DecisionSocket: filepath.Join(dir, "decisions.sock"), CatalogueCopy: filepath.Join(dir, "catalogue.json"),
		CatalogueTools: []string{"read_file"}, Context: "doctor",
	}
	plan, err := Plan(spec, w)
	if err != nil {
		return nil, nil, err
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
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + childPath, "HOME=" + dir, "CLAUDE_CONFIG_DIR=" + filepath.Join(dir, "claude-home"),
		"ANTHROPIC_BASE_URL=http://127.0.0.1:9", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1", "DISABLE_ERROR_REPORTING=1", "DISABLE_TELEMETRY=1"}
	cmd.WaitDelay = 2 * time.Second
	out, runErr := cmd.CombinedOutput()
	if m := unknownOption.FindSubmatch(out); m != nil {
		return checked, []string{fmt.Sprintf("%s does not take %s, which the launch uses", binary, m[1])}, nil
	}
	if strings.Contains(string(out), settingsMissing) {
		return checked, nil, nil
	}
	first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return checked, []string{fmt.Sprintf("%s did not get as far as the --settings file with the launch's flags (%v): %q", binary, runErr, first)}, nil
}
