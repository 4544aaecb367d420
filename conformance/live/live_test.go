package live

import (
	"strings"
	"testing"
)

// TestStepsFailWithoutEvidence: an outcome with nothing in it passes no
// step, so a PASS line always rests on something the session showed.
func TestStepsFailWithoutEvidence(t *testing.T) {
	for _, st := range (&Outcome{}).Steps() {
		if st.Detail == "" {
			t.Errorf("step %q passed on an empty outcome", st.Name)
		}
	}
}

func TestRefusedNamesTheRefusalLine(t *testing.T) {
	o := &Outcome{Code: 2, Stderr: "some noise\nmetaharness: vendor-not-found: claude is missing\n"}
	if got := o.Refused(); got != "metaharness: vendor-not-found: claude is missing" {
		t.Errorf("Refused() = %q", got)
	}
	if got := (&Outcome{Code: 1, Stderr: "metaharness: x: y"}).Refused(); got != "" {
		t.Errorf("a run that was not refused: Refused() = %q", got)
	}
}

func TestEmbeddedMaterialIsValid(t *testing.T) {
	if _, err := sealedFrame(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(toolsYAML), "metaharness.tool-contract/1") {
		t.Error("tools.yaml is not a tool contract")
	}
}
