// Package sessionbus starts a real, private D-Bus session bus for tests,
// optionally with a real Secret Service on it (gnome-keyring-daemon, its
// login collection unlocked), and stores secrets in it with secret-tool: the
// OS secret store --api-key-secret reaches, without touching the caller's.
//
// It needs dbus-daemon, gnome-keyring-daemon and secret-tool (the Debian
// packages dbus, gnome-keyring and libsecret-tools; .ci/run installs them).
// Without them a test skips, or fails under
// METAHARNESS_REQUIRE_REAL_CLIENTS=1, as every real-client test does
// (testkit/vendortest).
package sessionbus

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/metaharness/metaharness/testkit/vendortest"
)

// Programs are what a bus with a Secret Service needs.
var Programs = []string{"dbus-daemon", "dbus-send", "gnome-keyring-daemon", "secret-tool"}

// Bus is one private session bus. Its socket is RuntimeDir/bus, so a client
// given only XDG_RUNTIME_DIR finds it as libdbus falls back to.
type Bus struct {
	// Address is the DBUS_SESSION_BUS_ADDRESS of the bus.
	Address string
	// RuntimeDir is an XDG_RUNTIME_DIR of its own (mode 0700).
	RuntimeDir string
	home       string // the keyring daemon's HOME (its keyrings)
}

// Env is the environment a client of the bus needs: the two variables
// --api-key-secret hands the loop.
func (b *Bus) Env() map[string]string {
	return map[string]string{"DBUS_SESSION_BUS_ADDRESS": b.Address, "XDG_RUNTIME_DIR": b.RuntimeDir}
}

// Require marks t a real-client test (vendortest.Record) and skips it, or
// fails it when real clients are required, unless every program a bus with
// a Secret Service needs is installed.
func Require(t testing.TB) {
	t.Helper()
	vendortest.Record(t)
	for _, p := range Programs {
		if _, err := exec.LookPath(p); err != nil {
			vendortest.Unavailable(t, "%s is not installed (Debian: apt-get install dbus gnome-keyring libsecret-tools): %v", p, err)
		}
	}
}

// config is a session bus of its own: one socket, EXTERNAL auth (the
// caller's uid), and no service directories, so nothing is activated on
// it and a Secret Service exists only when Start starts one.
const config = `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=%s</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
`

// Start starts a private bus, and on it, when keyring is set, a
// gnome-keyring-daemon serving the Secret Service with its login
// collection unlocked. Both end with the test.
func Start(t testing.TB, keyring bool) *Bus {
	t.Helper()
	Require(t)
	root, err := os.MkdirTemp("", "mh-bus-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	b := &Bus{RuntimeDir: filepath.Join(root, "run"), home: filepath.Join(root, "home")}
	for _, d := range []string{b.RuntimeDir, b.home} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	conf := filepath.Join(root, "bus.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, config, filepath.Join(b.RuntimeDir, "bus")), 0o600); err != nil {
		t.Fatal(err)
	}
	daemon := exec.Command("dbus-daemon", "--config-file="+conf, "--nofork", "--print-address=1")
	daemon.Env = b.daemonEnv()
	out, err := daemon.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	daemon.Stderr = &stderr
	if err := daemon.Start(); err != nil {
		t.Fatalf("starting dbus-daemon: %v", err)
	}
	stop(t, daemon)
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("dbus-daemon printed no address: %v (%s)", err, stderr.String())
	}
	b.Address = strings.TrimSpace(addr)
	if keyring {
		b.startKeyring(t)
	}
	return b
}

func (b *Bus) daemonEnv() []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + b.home, "XDG_RUNTIME_DIR=" + b.RuntimeDir}
	if b.Address != "" {
		env = append(env, "DBUS_SESSION_BUS_ADDRESS="+b.Address)
	}
	return env
}

// startKeyring runs gnome-keyring-daemon on the bus, the login collection
// unlocked with a password on its stdin, and waits until it owns
// org.freedesktop.secrets.
func (b *Bus) startKeyring(t testing.TB) {
	t.Helper()
	k := exec.Command("gnome-keyring-daemon", "--foreground", "--unlock", "--components=secrets")
	k.Env = b.daemonEnv()
	k.Stdin = strings.NewReader("metaharness-test-keyring")
	var stderr bytes.Buffer
	k.Stdout, k.Stderr = &stderr, &stderr
	if err := k.Start(); err != nil {
		t.Fatalf("starting gnome-keyring-daemon: %v", err)
	}
	stop(t, k)
	deadline := time.Now().Add(30 * time.Second)
	for !b.HasSecretService() {
		if time.Now().After(deadline) {
			t.Fatalf("gnome-keyring-daemon did not take org.freedesktop.secrets on the bus within 30 s: %s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// HasSecretService reports whether something owns org.freedesktop.secrets
// on the bus.
func (b *Bus) HasSecretService() bool {
	cmd := exec.Command("dbus-send", "--session", "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
		"org.freedesktop.DBus.NameHasOwner", "string:org.freedesktop.secrets")
	cmd.Env = b.daemonEnv()
	out, err := cmd.Output()
	return err == nil && bytes.Contains(out, []byte("boolean true"))
}

// Store puts secret into the default collection under the attributes
// (name, value pairs), with secret-tool, the way an operator would.
func (b *Bus) Store(t testing.TB, secret string, attrs ...string) {
	t.Helper()
	cmd := exec.Command("secret-tool", append([]string{"store", "--label=metaharness test"}, attrs...)...)
	cmd.Env = b.daemonEnv()
	cmd.Stdin = strings.NewReader(secret)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("secret-tool store %v: %v: %s", attrs, err, out)
	}
}

// stop ends a daemon with the test: SIGTERM, then SIGKILL if it lingers.
func stop(t testing.TB, cmd *exec.Cmd) {
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
}
