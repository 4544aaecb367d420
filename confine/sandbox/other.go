//go:build !linux

package sandbox

import "errors"

// ABI is 0 off Linux: there is no Landlock.
func ABI() (int, string) { return 0, "no Landlock (this is not Linux)" }

// Exec runs nothing off Linux.
func Exec(_ string, r Rules, _ []string) error { return Enter(r) }

// Enter makes no domain off Linux.
func Enter(Rules) error {
	return errors.New("the command sandbox needs Linux's Landlock, and this is not Linux")
}
