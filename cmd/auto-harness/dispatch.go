package main

import (
	"errors"

	"github.com/metaharness/metaharness/autoharness/actions"
)

// dispatchCmd is `auto-harness dispatch`, the dispatch Action's work: its
// inputs come from HARNESS_* variables alone.
type dispatchCmd struct{}

func (dispatchCmd) run(a *app) error {
	if g := a.g; g.APIURL != nil || g.APIKeyFile != nil || g.AllowInsecureHTTP || g.AdminPasswordStdin || g.AdminUsername != nil {
		return usageErrorf("dispatch reads its inputs from HARNESS_* variables only (HARNESS_URL, HARNESS_API_KEY, …; auto-harness dispatch --help lists them), not from the global flags")
	}
	err := actions.Run(a.ctx, a.w.env, a.w.stdout, nil)
	var refused *actions.DispatchError
	if errors.As(err, &refused) {
		return usageErrorf("%s (%s)", refused.Message, refused.Code)
	}
	return err
}
