package gemini_test

import "github.com/metaharness/metaharness/testkit/schemacheck"

// Every line this package's tests render is held to the published schemas.
func init() { schemacheck.Install(nil) }
