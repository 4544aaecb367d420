package b10x

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/metaharness/metaharness/launcher/contextfile"
	"github.com/metaharness/metaharness/launcher/kind"
)

// longFlag is a long option as clap's help lists it.
var longFlag = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`--[a-z0-9][a-z0-9-]*`) })

// ProbeFlags reads the options `b10x-harness run --help` declares, in the
// environment a launch would give the loop, and holds to them every flag
// any launch can emit (EmittedFlags). The loop's version string has not
// always moved when its flags did, so the flags are checked, not only the
// version.
func (Kind) ProbeFlags(ctx context.Context, binary, callerHome, scratch string) ([]string, []string, error) {
	emitted, err := EmittedFlags()
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "run", "--help")
	cmd.Env = []string{"PATH=" + kind.ChildPath(callerHome), "XDG_CONFIG_HOME=" + filepath.Join(scratch, "config")}
	cmd.Dir = scratch
	out, err := cmd.Output()
	if err != nil {
		return nil, nil, fmt.Errorf("%s run --help: %w", binary, err)
	}
	declared := longFlag().FindAllString(string(out), -1)
	var faults []string
	for _, f := range emitted {
		if !slices.Contains(declared, f) {
			faults = append(faults, fmt.Sprintf("%s does not declare %s, which the launch uses", binary, f))
		}
	}
	return emitted, faults, nil
}

// EmittedFlags is every flag a b10x launch can put on the loop's argv, in
// the order the launch writes them: the union over launches that between
// them set every b10x flag (each credential, each confinement).
func EmittedFlags() ([]string, error) {
	flags := Flags{Hooks: "/h", Driver: "/d", SubstrateEmbedded: true, CgroupRoot: "/c", Toolchain: "t",
		Prices: "/p", WriteScope: []string{"**=allowed"}, ScopeAnnounce: "silent", ProcessWriteSubtree: []string{"d"},
		ModelWire: Wires[0]}
	base := kind.Spec{Kind: name, Prompt: "doctor", Decisions: "observe", Hermetic: "off", Credentials: kind.CredentialsAPIKey,
		Model: "doctor-probe", ModelEndpoint: "https://example.invalid", MaxTurns: 1, AllowProgs: []string{"cargo"}}
	secret, subFile, subEnv := base, base, base
	secretFlags, subFileFlags, subEnvFlags := flags, flags, flags
	secretFlags.APIKeySecret, secretFlags.SubstrateEmbedded, secretFlags.Substrate, secretFlags.Toolchain = "doctor", false, "/s", ""
	subFile.Credentials, subFileFlags.SubscriptionTokenFile, subFileFlags.SubscriptionTokenPointer = kind.CredentialsNone, "/t", "/a"
	subEnv.Credentials, subEnvFlags.SubscriptionTokenEnv = kind.CredentialsNone, "DOCTOR_TOKEN"
	base.KindFlags, secret.KindFlags, subFile.KindFlags, subEnv.KindFlags = &flags, &secretFlags, &subFileFlags, &subEnvFlags
	w := &kind.World{Env: map[string]string{KeyEnv: "doctor", "DOCTOR_TOKEN": "doctor"}, Scratch: "/scratch", Binary: "b10x-harness",
		ContextFiles: []contextfile.File{{Path: "a.md", Text: "doctor"}}}
	var out []string
	for _, s := range []kind.Spec{base, secret, subFile, subEnv} {
		p, err := Plan(&s, w)
		if err != nil {
			return nil, fmt.Errorf("planning the widest launch: %w", err)
		}
		for _, a := range p.Args {
			f, _, _ := strings.Cut(a, "=")
			if strings.HasPrefix(f, "--") && !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	return out, nil
}

// EnvChecks asks whether the OS secret store --api-key-secret reads from
// answers in the environment a launch would give the loop: the session bus
// the caller's DBUS_SESSION_BUS_ADDRESS (or $XDG_RUNTIME_DIR/bus) names, and
// org.freedesktop.secrets owned or activatable on it. Only --api-key-secret
// needs it, so a missing store is a warning, never a failure.
func (Kind) EnvChecks(ctx context.Context, getenv func(string) string) []kind.Check {
	env := []string{"PATH=" + kind.ChildPath(getenv("HOME"))}
	var given []string
	for _, k := range BusEnv {
		if v := getenv(k); v != "" {
			env = append(env, k+"="+v)
			given = append(given, k+"="+v)
		}
	}
	check := func(v kind.Verdict, format string, args ...any) []kind.Check {
		return []kind.Check{{Verdict: v, Name: "secret-store", Reason: fmt.Sprintf(format, args...)}}
	}
	const without = "--api-key-secret would be refused (api-key-secret-unavailable); --credentials api-key with " + KeyEnv + " needs no store"
	if len(given) == 0 {
		return check(kind.Warn, "no session bus: neither %s is set; %s", strings.Join(BusEnv, " nor "), without)
	}
	ask := func(method string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "dbus-send", append([]string{"--session", "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus." + method}, args...)...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if _, err := exec.LookPath("dbus-send"); err != nil {
		return check(kind.Warn, "not checked: dbus-send (Debian: dbus) is not installed to ask the bus %s", strings.Join(given, ", "))
	}
	owned, err := ask("NameHasOwner", "string:org.freedesktop.secrets")
	if err != nil {
		return check(kind.Warn, "the session bus (%s) does not answer: %s; %s", strings.Join(given, ", "), firstLine(owned), without)
	}
	if strings.Contains(owned, "boolean true") {
		return check(kind.OK, "org.freedesktop.secrets answers on the session bus (%s), in the environment a launch gives the loop", strings.Join(given, ", "))
	}
	if names, err := ask("ListActivatableNames"); err == nil && strings.Contains(names, `"org.freedesktop.secrets"`) {
		return check(kind.OK, "org.freedesktop.secrets is activatable on the session bus (%s), in the environment a launch gives the loop", strings.Join(given, ", "))
	}
	return check(kind.Warn, "no Secret Service on the session bus (%s): nothing owns or activates org.freedesktop.secrets; %s", strings.Join(given, ", "), without)
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}
