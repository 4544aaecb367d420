// Package sandbox is the command sandbox: the program a kind puts in front
// of each of the agent's commands (Claude Code's shell prefix, codex's
// login shell, Gemini CLI's bash), which enters a Landlock domain of the
// command's own and executes the shell in it.
//
// Why a package apart from confine, importing the standard library alone:
// it starts once per command, and what it costs is this binary's start. Go
// initialises the lexically first package whose imports are ready, so an
// entry that waits on confine (net, golang.org/x/sys, go-landlock's psx)
// runs after the OTLP, gRPC and protobuf libraries have initialised; one
// that waits on nothing but the standard library runs before them
// (internal/earlysandbox, held by TestEarlyEntrySkipsTheHeavyInits). So
// Landlock's three calls are made here directly rather than through
// go-landlock. Even strconv, strings and path/filepath are left out: their
// paths sort after those libraries', and a package initialises only after
// everything it imports, so each would put the libraries first again.
package sandbox

// ScopedABI is the first Landlock ABI that scopes signals and abstract unix
// sockets (Linux 6.12): the command sandbox needs it.
const ScopedABI = 6

// Rules are what the command sandbox takes from each command beyond its
// scopes: what the vendor holds and its commands must not.
type Rules struct {
	// Unset are environment variables meant for the vendor alone (the
	// proxy's placeholder and address, a messaging socket of its own),
	// taken out of what the command inherits.
	Unset []string `json:"unset,omitempty"`
	// Connect, when not nil, are the only TCP ports the command may
	// connect to (Landlock's network rules): the egress gate's, so that
	// the model route beside it is out of reach. Nil leaves TCP alone, as
	// for a child that uses the host's network.
	Connect []uint16 `json:"connect,omitempty"`
}

// Verb is the sandbox's hidden verb, its program's first argument.
const Verb = "internal-sandbox"

// Args are the sandbox's arguments after its program's name, before the
// shell's own.
func Args(shell string, r Rules) []string {
	args := []string{Verb, "--shell", shell}
	for _, n := range r.Unset {
		args = append(args, "--unset", n)
	}
	if r.Connect != nil {
		ports := ""
		for i, p := range r.Connect {
			if i > 0 {
				ports += ","
			}
			ports += itoa(uint64(p))
		}
		args = append(args, "--connect", ports)
	}
	return append(args, "--")
}

// Parse reads args as Args writes them, followed by at least one argument
// for the shell: the shell, the rules and the shell's arguments. Not ok:
// anything else, which the sandbox never runs.
func Parse(args []string) (shell string, r Rules, rest []string, ok bool) {
	if len(args) < 5 || args[0] != Verb || args[1] != "--shell" || args[2] == "" || args[2][0] != '/' {
		return "", r, nil, false
	}
	shell, args = args[2], args[3:]
	for len(args) > 1 && args[0] == "--unset" {
		if !envName(args[1]) {
			return "", r, nil, false
		}
		r.Unset, args = append(r.Unset, args[1]), args[2:]
	}
	if len(args) > 1 && args[0] == "--connect" {
		r.Connect = []uint16{}
		for list := args[1]; list != ""; {
			f := list
			if i := indexByte(list, ','); i >= 0 {
				f, list = list[:i], list[i+1:]
				if list == "" {
					return "", r, nil, false // a trailing comma
				}
			} else {
				list = ""
			}
			p, ok := port(f)
			if !ok {
				return "", r, nil, false
			}
			r.Connect = append(r.Connect, p)
		}
		args = args[2:]
	}
	if len(args) < 2 || args[0] != "--" {
		return "", r, nil, false
	}
	return shell, r, args[1:], true
}

// envName reports whether n is a variable name a shell takes.
func envName(n string) bool {
	for i, c := range n {
		if c != '_' && (c < 'A' || c > 'Z') && (c < 'a' || c > 'z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return n != ""
}

// withoutVars is env less every entry that names one of names.
func withoutVars(env, names []string) []string {
	if len(names) == 0 {
		return env
	}
	out := env[:0:0]
	for _, kv := range env {
		k := kv
		if i := indexByte(kv, '='); i >= 0 {
			k = kv[:i]
		}
		if !contains(names, k) {
			out = append(out, kv)
		}
	}
	return out
}

// The small string helpers the sandbox needs, written out for the reason
// in the package doc.

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

func contains(names []string, k string) bool {
	for _, n := range names {
		if n == k {
			return true
		}
	}
	return false
}

// port reads a TCP port as Args writes it: decimal, 1 to 65535, no sign
// and no leading zero.
func port(f string) (uint16, bool) {
	if f == "" || len(f) > 5 || f[0] == '0' {
		return 0, false
	}
	n := 0
	for i := 0; i < len(f); i++ {
		if f[i] < '0' || f[i] > '9' {
			return 0, false
		}
		n = n*10 + int(f[i]-'0')
	}
	return uint16(n), n <= 65535
}

func itoa(n uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		if n /= 10; n == 0 {
			return string(b[i:])
		}
	}
}
