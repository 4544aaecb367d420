package main

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/alecthomas/kong"
)

// cli is the whole command line: the seed's commands, dispatch and help.
type cli struct {
	globals `embed:""`

	Version kong.VersionFlag `help:"Print the version and exit."`

	API            apiCmd      `cmd:"" name:"api" help:"Send any request of the API as it is and print the answer."`
	Whoami         whoamiCmd   `cmd:"" help:"Print who the credential is (allowlisted fields only)."`
	Doctor         doctorCmd   `cmd:"" help:"Check the URL, that the control plane answers, and the credential."`
	Host           hostCmd     `cmd:"" help:"The fleet's hosts: list, drain, resume, inventory, repositories, smoke."`
	Repo           repoCmd     `cmd:"" help:"Repositories: add, list, rm."`
	ServiceAccount accountCmd  `cmd:"" name:"service-account" help:"Service accounts: list, create (its key shown once), rm."`
	Session        sessionCmd  `cmd:"" help:"Sessions: create (and wait), get, logs, cancel."`
	Dispatch       dispatchCmd `cmd:"" help:"The dispatch Action's work, from HARNESS_* variables."`
	Help           helpCmd     `cmd:"" help:"Print the usage."`
}

// globals are the flags every command takes, before or after its name.
// Those that say a value are pointers: nil when not given, so that an
// empty value is refused rather than read as "not given" and replaced by
// the environment's.
type globals struct {
	APIURL             *string    `name:"api-url" placeholder:"URL" help:"The control plane's URL (else HARNESS_API_URL, else HARNESS_API_HTTP)."`
	APIKeyFile         *string    `name:"api-key-file" placeholder:"PATH" help:"A file holding the API key (else HARNESS_API_KEY, else HARNESS_API_KEY_FILE)."`
	AllowInsecureHTTP  switchFlag `name:"allow-insecure-http" help:"Allow plain http, to a loopback host only."`
	AdminPasswordStdin switchFlag `name:"admin-password-stdin" help:"Log in as the admin with the password read from stdin."`
	AdminUsername      *string    `name:"admin-username" placeholder:"NAME" help:"The admin's name with --admin-password-stdin (default admin)."`
}

// switchFlag is a boolean flag that takes no value: --json=false is
// refused rather than read (kong's own bool would take it).
type switchFlag bool

// Decode implements kong.MapperValue.
func (s *switchFlag) Decode(ctx *kong.DecodeContext) error {
	if ctx.Scan.Peek().Type == kong.FlagValueToken {
		return fmt.Errorf("does not take a value")
	}
	*s = true
	return nil
}

// IsBool implements kong.BoolMapperValue: the flag is given alone.
func (s *switchFlag) IsBool() bool { return true }

// refuseBlankValues refuses every flag given with a blank value: a value
// is what the flag is for, and an empty one never means "use the
// environment's".
func refuseBlankValues(kctx *kong.Context) error {
	for _, p := range kctx.Path {
		if p.Flag == nil {
			continue
		}
		v := p.Flag.Target
		for v.Kind() == reflect.Pointer && !v.IsNil() {
			v = v.Elem()
		}
		blank := v.Kind() == reflect.String && strings.TrimSpace(v.String()) == ""
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.String {
			for i := range v.Len() {
				blank = blank || strings.TrimSpace(v.Index(i).String()) == ""
			}
		}
		if blank {
			return usageErrorf("--%s was given an empty value", p.Flag.Name)
		}
	}
	return nil
}

// usageError is a refusal of the command line, an input or the
// configuration: exit 2, before any request.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// reported is a failure the command has printed itself (a failed doctor
// check, a smoke's summary): exit 1 with no further line.
type reported struct{}

func (reported) Error() string { return "reported" }
