package contextfile

import (
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

func TestCheckArgSizes(t *testing.T) {
	files := []File{testFile("docs/a.md", strings.Repeat("a", 40000)), testFile("b.md", "bb")}
	fits := strings.Repeat("x", MaxArgStrlen-1) // with its NUL, exactly the limit
	over := fits + "x"
	if err := CheckArgSizes([]string{"claude", "--append-system-prompt", fits, "-p", "task"}, files); err != nil {
		t.Errorf("an argument of exactly %d bytes with its NUL: %v", MaxArgStrlen, err)
	}
	if err := CheckArgSizes(nil, nil); err != nil {
		t.Errorf("empty argv: %v", err)
	}
	for _, c := range []struct {
		name string
		argv []string
		say  []string
	}{
		{"value of the flag before it", []string{"claude", "--append-system-prompt", over, "-p", "task"},
			[]string{"argument 2", "(the value of --append-system-prompt)", "131073 bytes", "131072", "MAX_ARG_STRLEN",
				"docs/a.md (40000 bytes)", "b.md (2 bytes)", "40002 bytes in all"}},
		{"flag=value", []string{"codex", "--config=" + over}, []string{"argument 1", "(--config=…)", "131082 bytes"}},
		{"no flag: the trailing task", []string{"claude", "--", "-p", "x", over}, []string{"argument 4 of the launch is"}},
		{"only the first that does not fit", []string{over, over + "x"}, []string{"argument 0 of the launch is 131073"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := CheckArgSizes(c.argv, files)
			wantRefusal(t, err, "argument-too-long", c.say...)
			if strings.Contains(err.Error(), "xxxx") {
				t.Error("the refusal quotes the argument's content")
			}
		})
	}
	err := CheckArgSizes([]string{"claude", "-p", over}, nil)
	wantRefusal(t, err, "argument-too-long", "(the value of -p)", "no --context files were declared")
}

// TestMaxArgStrlenIsTheKernelsLimit runs a real execve on each side of the
// limit, so the constant is held to the kernel and not to a comment.
func TestMaxArgStrlenIsTheKernelsLimit(t *testing.T) {
	bin, err := exec.LookPath("true")
	if err != nil {
		t.Skip("no `true` program to exec")
	}
	if err := exec.Command(bin, strings.Repeat("x", MaxArgStrlen-1)).Run(); err != nil {
		t.Errorf("an argument of MaxArgStrlen bytes with its NUL must exec: %v", err)
	}
	err = exec.Command(bin, strings.Repeat("x", MaxArgStrlen)).Run()
	if !errors.Is(err, syscall.E2BIG) {
		t.Errorf("an argument one byte past MaxArgStrlen must fail with E2BIG, got %v", err)
	}
}
