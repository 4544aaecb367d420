package b10x_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/metaharness/metaharness/conformance/scripted"
	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/launcher/b10x"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/record"
	"github.com/metaharness/metaharness/testkit/b10xstandin"
	"github.com/metaharness/metaharness/testkit/sessionbus"
)

// The key stored in the test's Secret Service; never a real one.
const storedKey = "sk-from-the-keyring-not-a-real-key"

// secretRun is a confined run whose loop reads its key from the OS secret
// store and sends it to a scripted model, under --hermetic strict.
func secretRun(t *testing.T, script b10xstandin.Config, endpoint string) (*world, *kind.Spec) {
	w, s := confinedWorld(t, script)
	s.Credentials, s.ModelEndpoint, s.Hermetic = "api-key", endpoint, "strict"
	s.KindFlags = &b10x.Flags{APIKeySecret: "openai"}
	return w, s
}

// TestAPIKeySecretThroughARealSecretService: --api-key-secret against a
// real Secret Service (gnome-keyring-daemon on a private dbus-daemon), the
// secret stored with secret-tool. The loop (the stand-in) reads it back with
// `secret-tool lookup` in exactly the environment metaharness gave it and
// sends it to the model; metaharness reads and forwards no key variable,
// though the caller has OPENAI_API_KEY. The run is --hermetic strict, so
// whether the store opens under the hermetic floor is what this test
// reports, not what it assumes.
func TestAPIKeySecretThroughARealSecretService(t *testing.T) {
	bus := sessionbus.Start(t, true)
	bus.Store(t, storedKey, "service", "b10x-harness", "username", "openai")
	model := scripted.NewOpenAIServer(scripted.Texts("done"), scripted.RequireKey(storedKey))
	defer model.Close()

	w, s := secretRun(t, b10xstandin.Config{CallModel: true, ReportCwd: true}, model.URL())
	for k, v := range bus.Env() {
		w.env[k] = v
	}
	w.env["OPENAI_API_KEY"] = "sk-the-callers-other-key"
	o := w.run(t, s, nil)
	// The loop dials its model itself, so H13 is the one gap strict finds.
	if o.code != exit.Gap || o.err != nil || strings.Count(o.stderr, "gap gating") != 1 || !strings.Contains(o.stderr, "H13  gap gating") {
		t.Fatalf("exit %d, %v, want exit 1 for H13 alone\n%s\n%s", o.code, o.err, o.raw, o.stderr)
	}
	t.Logf("the Secret Service opened under the hermetic floor: the confined loop, given only %v and the bus socket bound into its mount view, read the item (%s) and the model saw it; --hermetic strict held every row but H13 (the wire, which the loop dials itself)",
		sortedKeys(o.seen.Env), o.seen.SecretLookup)

	if keys := sortedKeys(o.seen.Env); !slices.Equal(keys, []string{"DBUS_SESSION_BUS_ADDRESS", "PATH", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR"}) {
		t.Errorf("the loop's environment has %v", keys)
	}
	if o.seen.Env["DBUS_SESSION_BUS_ADDRESS"] != bus.Address || o.seen.Env["XDG_RUNTIME_DIR"] != bus.RuntimeDir {
		t.Errorf("the bus variables were not the caller's: %v", o.seen.Env)
	}
	sum := sha256.Sum256([]byte(storedKey))
	if o.seen.SecretLookup != "found" || o.seen.CredentialSHA256 != hex.EncodeToString(sum[:]) || o.seen.Credential != "api-key:secret-store" {
		t.Errorf("the loop's credential: %s, %s, lookup %q", o.seen.Credential, o.seen.CredentialSHA256, o.seen.SecretLookup)
	}
	if !slices.Contains(o.seen.Argv, "--api-key-secret") || slices.Contains(o.seen.Argv, "--api-key-env") {
		t.Errorf("argv %q", o.seen.Argv)
	}
	reqs := model.Requests()
	if len(reqs) != 1 || reqs[0].Credential() != storedKey || reqs[0].Status != 200 {
		t.Errorf("the model saw %d request(s): %+v", len(reqs), reqs)
	}
	for _, out := range []string{o.raw, o.stderr} {
		if strings.Contains(out, storedKey) || strings.Contains(out, "sk-the-callers-other-key") {
			t.Errorf("a key reached metaharness's output:\n%s", out)
		}
	}
	st := o.find(t, "session.started").(*record.SessionStarted)
	if _, ok := o.warnings()["CONFINEMENT_UNAVAILABLE"]; ok || !strings.Contains(rowHow(st.Hermetic, "h6"), "enforced in the child's mount view") {
		t.Errorf("the run was not confined: %v, h6 %q", o.warnings(), rowHow(st.Hermetic, "h6"))
	}
	if deref(st.CredentialSource) != "api-key:secret-store" || !slices.ContainsFunc(st.Hermetic.AmbientInputs, func(s string) bool { return strings.HasPrefix(s, "the session bus") }) {
		t.Errorf("session.started: credential %q, ambient %q", deref(st.CredentialSource), st.Hermetic.AmbientInputs)
	}
}

// TestAPIKeySecretRefusalsNameWhatIsMissing: the item is not in the store,
// the bus has no Secret Service, the caller has no bus at all. Each is the
// loop's refused record (no model request) and metaharness's refusal.
func TestAPIKeySecretRefusalsNameWhatIsMissing(t *testing.T) {
	sessionbus.Require(t)
	model := scripted.NewOpenAIServer(scripted.Texts("done"))
	defer model.Close()
	for _, c := range []struct {
		name    string
		refusal exit.Name
		says    string
		bus     func() map[string]string
	}{
		{"no such item", b10x.RefuseAPIKeySecretNotFound, "which holds no such item", func() map[string]string {
			bus := sessionbus.Start(t, true)
			bus.Store(t, storedKey, "service", "b10x-harness", "username", "someone-else")
			return bus.Env()
		}},
		{"no Secret Service on the bus", b10x.RefuseAPIKeySecretUnavailable, "could not open the OS secret store (reading the API key secret `openai`: secret is unavailable) with DBUS_SESSION_BUS_ADDRESS=", func() map[string]string {
			bus := sessionbus.Start(t, false)
			if bus.HasSecretService() {
				t.Fatal("a bus with no keyring has a Secret Service")
			}
			return bus.Env()
		}},
		{"no bus", b10x.RefuseAPIKeySecretUnavailable, "with neither DBUS_SESSION_BUS_ADDRESS nor XDG_RUNTIME_DIR (the caller has neither)", func() map[string]string { return nil }},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, s := secretRun(t, b10xstandin.Config{CallModel: true}, model.URL())
			for k, v := range c.bus() {
				w.env[k] = v
			}
			o := w.run(t, s, nil)
			var r *exit.Refusal
			if o.code != exit.Refused || !errors.As(o.err, &r) || r.Name != c.refusal || !strings.Contains(r.Message, c.says) {
				t.Fatalf("exit %d, %v; want %s saying %q", o.code, o.err, c.refusal, c.says)
			}
			if _, ok := o.warnings()["LOOP_REFUSED"]; !ok || o.names()[len(o.lines)-1] != "stream.closed" {
				t.Errorf("events %v", o.names())
			}
		})
	}
	if n := len(model.Requests()); n != 0 {
		t.Errorf("a refused run reached the model %d time(s)", n)
	}
}

// TestDoctorAsksTheSecretStoreTheLoopWouldReach: doctor b10x's secret-store
// check against a real bus with and without a Secret Service, in the
// environment a launch gives the loop; a missing store is a warning.
func TestDoctorAsksTheSecretStoreTheLoopWouldReach(t *testing.T) {
	sessionbus.Require(t)
	for _, c := range []struct {
		name    string
		keyring bool
		want    string
	}{
		{"with gnome-keyring", true, "ok secret-store: org.freedesktop.secrets answers on the session bus (DBUS_SESSION_BUS_ADDRESS="},
		{"without a Secret Service", false, "warn secret-store: no Secret Service on the session bus (DBUS_SESSION_BUS_ADDRESS="},
	} {
		t.Run(c.name, func(t *testing.T) {
			bus := sessionbus.Start(t, c.keyring)
			env := bus.Env()
			got := b10x.Kind{}.EnvChecks(context.Background(), func(k string) string { return env[k] })
			if len(got) != 1 || !strings.HasPrefix(got[0].String(), c.want) {
				t.Errorf("%v, want a line starting %q", got, c.want)
			}
		})
	}
}

// rowHow is row's words in a, imposed or, where a bound did not hold,
// withdrawn as unavailable with the launch's words kept.
func rowHow(a *record.Attestation, row string) string {
	for _, r := range a.Imposed {
		if r.Row == row {
			return r.How
		}
	}
	for _, r := range a.Unavailable {
		if r.Row == row {
			return r.Why
		}
	}
	return ""
}
