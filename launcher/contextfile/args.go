package contextfile

import (
	"fmt"
	"strings"

	"github.com/metaharness/metaharness/exit"
)

// MaxArgStrlen is Linux's limit on one argument or environment string passed
// to execve, counting its terminating NUL (MAX_ARG_STRLEN, 32 pages of 4 KiB).
// A longer one makes execve fail with E2BIG after everything else was set up.
const MaxArgStrlen = 131072

// CheckArgSizes measures every argument of a planned launch against
// MaxArgStrlen and refuses the first that does not fit, naming it (its index
// in argv and the flag it belongs to, if any), its size, and each context
// file with its size, since the --context byte cap bounds what the files add
// but not the task they are put beside.
func CheckArgSizes(argv []string, files []File) error {
	for i, a := range argv {
		size := len(a) + 1
		if size <= MaxArgStrlen {
			continue
		}
		return exit.Refuse(RefuseArgumentTooLong,
			"argument %d of the launch%s is %d bytes with its terminating NUL, past Linux's limit of %d on one argument (MAX_ARG_STRLEN); %s; shorten what that argument carries (the task, the --context files, or the --catalogue entries it lists)",
			i, argFlag(argv, i), size, MaxArgStrlen, fileSizes(files))
	}
	return nil
}

// argFlag names the flag argument i belongs to: its own "--flag="
// head when it has one, else the flag just before it. The argument's content
// is never quoted: it may be a task or a file the operator did not mean to
// print.
func argFlag(argv []string, i int) string {
	if flag, _, ok := strings.Cut(argv[i], "="); ok && strings.HasPrefix(flag, "--") && !strings.ContainsAny(flag, " \t\n") {
		return " (" + flag + "=…)"
	}
	if i > 0 && strings.HasPrefix(argv[i-1], "-") && len(argv[i-1]) < 256 {
		return " (the value of " + argv[i-1] + ")"
	}
	return ""
}

// fileSizes lists the context files with their sizes for a refusal.
func fileSizes(files []File) string {
	if len(files) == 0 {
		return "no --context files were declared"
	}
	parts := make([]string, len(files))
	total := 0
	for i, f := range files {
		parts[i] = fmt.Sprintf("%s (%d bytes)", f.Path, len(f.Text))
		total += len(f.Text)
	}
	return fmt.Sprintf("the --context files are %s, %d bytes in all", strings.Join(parts, ", "), total)
}
