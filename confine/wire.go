package confine

// What metaharness and its init say to each other. The init inherits two
// descriptors: ConfigFD, a pipe it reads one launch from to its end, and
// ControlFD, a SOCK_SEQPACKET socket it answers on, one report a packet.
const (
	ConfigFD  = 3
	ControlFD = 4
)

// maxConfig bounds the launch the init reads: arguments are each held to
// MAX_ARG_STRLEN already, and a launch is a few of them.
const maxConfig = 16 << 20

// launch is what metaharness sends the init.
type launch struct {
	Spec    Spec    `json:"spec"`
	Command Command `json:"command"`
}

// report is one packet from the init. A Listening report carries the
// listener's descriptor (SCM_RIGHTS).
type report struct {
	Listening string `json:"listening,omitempty"`
	Started   bool   `json:"started,omitempty"`
	Failed    string `json:"failed,omitempty"`
	Exited    *Exit  `json:"exited,omitempty"`
}
