package kind

import (
	"time"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/confine"
	"github.com/metaharness/metaharness/frame"
	"github.com/metaharness/metaharness/record"
)

// Hermetic is --hermetic: the recorded mode (the controls are imposed
// whatever it says); strict owes an audit and fails on any row not ok.
type Hermetic string

const (
	HermeticOff    Hermetic = "off"
	HermeticOn     Hermetic = "on"
	HermeticStrict Hermetic = "strict"
)

// ToolSurface is --tool-surface: the vendor's own tools, or only
// metaharness's server; "" when the flag was not given.
type ToolSurface string

const (
	SurfaceNative ToolSurface = "native"
	SurfaceOwned  ToolSurface = "owned"
)

// Credentials is --credentials: how the child reaches the model, in the
// words the floor judges H4 by.
type Credentials = attest.Credentials

const (
	CredentialsNone          = attest.CredentialsNone
	CredentialsAPIKey        = attest.CredentialsAPIKey
	CredentialsLoopback      = attest.CredentialsLoopback
	CredentialsOperatorLogin = attest.CredentialsOperatorLogin
)

// Output is --output: what stdout carries.
type Output string

const (
	OutputEvents Output = "events"
	OutputFinal  Output = "final"
	// OutputStatus: one fixed line at the end, naming the outcome and where
	// the records are, never the answer (which the records hold), so that
	// a fleet that reads stdout for words sees none of the model's.
	OutputStatus Output = "status"
)

// DefaultThrottleBudget is --throttle-budget when it is not given: how long
// one model request may wait out the upstream's throttles before the run
// stops on a 429 (exit 4). A minute covers the per-minute windows the
// model APIs throttle in, and is a small part of a fleet session's time,
// where a usage limit would cool the account down for hours.
const DefaultThrottleBudget = time.Minute

// Spec is one run as the caller declared it: every `run` flag, kind-neutral.
// The CLI fills it 1:1 from its flags; nothing here is read from the world.
type Spec struct {
	Kind     string   `json:"kind"`
	Prompt   string   `json:"prompt"`
	Hermetic Hermetic `json:"hermetic"`
	Audit    bool     `json:"audit,omitempty"`

	Frame       string      `json:"frame,omitempty"` // path of a sealed frame
	Decisions   frame.Mode  `json:"decisions"`
	ToolSurface ToolSurface `json:"tool_surface"`
	Catalogue   string      `json:"catalogue,omitempty"` // path of a tool contract
	// StrictCatalogue refuses a contract with an entry this build does not
	// perform, which otherwise loads with a warning on stderr.
	StrictCatalogue bool     `json:"strict_catalogue,omitempty"`
	AllowProgs      []string `json:"allow_program,omitempty"`

	Credentials Credentials `json:"credentials"`
	TokenEnv    string      `json:"token_env,omitempty"`
	TokenFile   string      `json:"token_file,omitempty"`
	// TokenFD is --token-fd: an inherited descriptor the token arrives on;
	// nil when the flag was not given.
	TokenFD       *int     `json:"token_fd,omitempty"`
	Model         string   `json:"model,omitempty"`
	ModelEndpoint string   `json:"model_endpoint,omitempty"`
	Effort        string   `json:"effort,omitempty"`
	MaxTurns      int      `json:"max_turns,omitempty"`
	MaxBudgetUSD  string   `json:"max_budget_usd,omitempty"`
	AllowEgress   []string `json:"allow_egress,omitempty"`
	// ThrottleBudget is --throttle-budget (loopback.Config.ThrottleBudget);
	// nil when it was not given (Throttle then reads a minute).
	ThrottleBudget *time.Duration `json:"throttle_budget,omitempty"`

	// Unconfined is --unconfined: the caller chose to run the child
	// without namespaces, which the attestation names as gaps.
	Unconfined bool `json:"unconfined,omitempty"`

	// Hide are more paths the child's view reads as empty (--hide and
	// $METAHARNESS_HIDE): the host's secrets the caller knows of beside
	// those metaharness hides itself.
	Hide []string `json:"hide,omitempty"`

	Cwd        string   `json:"cwd,omitempty"`
	ScratchCwd bool     `json:"scratch_cwd,omitempty"`
	Context    []string `json:"context,omitempty"`

	StrictVersion bool   `json:"strict_version,omitempty"`
	RetainDir     string `json:"retain_dir,omitempty"`

	// Auditor and AuditSpec are nil when the flag was not given, and may be
	// given empty (which the pairing checks refuse by name).
	Auditor     *string  `json:"auditor,omitempty"`
	AuditSpec   *string  `json:"spec,omitempty"`
	AuditorArgs []string `json:"auditor_args,omitempty"`

	Output          Output `json:"output,omitempty"`
	Events          string `json:"events,omitempty"`
	AttestationFile string `json:"attestation,omitempty"`
	// Statement is --statement: where the run's signed in-toto statement
	// goes; SignKey is --sign-key, the private key that signs it (the
	// child's view reads it as empty).
	Statement string `json:"statement,omitempty"`
	SignKey   string `json:"sign_key,omitempty"`
	// OTLPEndpoint is --otlp-endpoint: the collector the run's trace goes
	// to (else $OTEL_EXPORTER_OTLP_ENDPOINT; none when neither is set).
	OTLPEndpoint string `json:"otlp_endpoint,omitempty"`
	// RecordsDir is --records-dir: an existing directory in which each run
	// makes one new directory of its own, named by its run id, for the
	// records no fleet variable names a place for (the run's runRecords).
	RecordsDir string `json:"records_dir,omitempty"`
	// SummaryFile and ArtifactsDir are a fleet's per-session places for a
	// run's results (launcher.EnvSummaryFile, EnvArtifactsDir): the run
	// summary, and the event stream and attestation. Empty when the fleet
	// names none.
	SummaryFile  string `json:"summary_file,omitempty"`
	ArtifactsDir string `json:"artifacts_dir,omitempty"`

	PluginDirs []string `json:"plugin_dir,omitempty"`
	AddDirs    []string `json:"add_dir,omitempty"`

	// KindFlags are the flags given that reach one kind only (b10x's),
	// nil when the kind has none; a kind's own JSON key carries them in a
	// C1 vector (launcher/kinds).
	KindFlags KindFlags `json:"-"`
}

// KindFlags are run flags that reach one kind's child only. The kind
// defines them (its FlagsKind.NewFlags), the CLI fills them through the
// kinds table, and the run's checks refuse each one given on another kind.
type KindFlags interface {
	// Kind names the kind the flags reach.
	Kind() string
	// RefuseOn is the refusal of the first flag given on kind, which it
	// does not reach (nil when none was given).
	RefuseOn(kind string) error
}

// Throttle is the throttle budget the run's proxy waits within.
func (s *Spec) Throttle() time.Duration {
	if s.ThrottleBudget == nil {
		return DefaultThrottleBudget
	}
	return *s.ThrottleBudget
}

// AuditOwed reports whether the run owes an audit report: --audit, or
// --hermetic strict, which asks for one the way --audit does.
func (s *Spec) AuditOwed() bool { return s.Audit || s.Hermetic == HermeticStrict }

// Plan is a launch as a value: what to write, what to run, with which
// environment and where. It is a pure function of a Spec and the observed
// world, which is what C1 vectors pin.
type Plan struct {
	Program string   `json:"program"`
	Args    []string `json:"args"`
	Env     []string `json:"env"` // sorted KEY=VALUE
	Dir     string   `json:"dir"`
	// StdinPipe gives the child a pipe as its stdin, for a kind the run
	// converses with (Pipes.Stdin); without it the child reads /dev/null.
	StdinPipe bool `json:"stdin_pipe,omitempty"`
	// Dirs are scratch directories of the kind's own (its config home),
	// made before Files are written.
	Dirs  []string `json:"dirs"`
	Files []File   `json:"files"`
	// Attestation is metaharness's claim of what it imposed, written into
	// session.started.hermetic.
	Attestation record.Attestation `json:"attestation"`
	// MCPServers are the servers the launch gives the child (H5 compares
	// them with the record).
	MCPServers []string `json:"mcp_servers"`
	// StandInCredential is the credential source, as the vendor's record
	// names it, through which the launch hands the child a fixed word that
	// is no credential (a vendor that sends nothing without one); "" when
	// there is none. H4 reads that source as no credential.
	StandInCredential string `json:"stand_in_credential,omitempty"`
	// Confinement is how the child is confined (Confinement), nil
	// when it is not.
	Confinement *confine.Spec `json:"confinement"`
	// DecisionChannel: the launch hands the child a program that asks the
	// run's decision channel (World.DecisionSocket: a hook, the catalogue
	// server). Without it the run opens no channel, so nothing in the
	// child's tree has a socket to put a forged request to.
	DecisionChannel bool `json:"decision_channel,omitempty"`
}

// File is one scratch file the plan writes before the spawn.
type File struct {
	Path    string `json:"path"`
	Mode    uint32 `json:"mode"`
	Content string `json:"content"`
}
