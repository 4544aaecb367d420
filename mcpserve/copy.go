package mcpserve

import (
	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/internal/newfile"
)

// CopyBytes renders the checked contract as its scratch copy (SPEC §7.4):
// JSON in which every character YAML refuses raw or reads as a line break is
// a \u escape, so the server's YAML reader reads back exactly what was
// checked.
func (c *Contract) CopyBytes() []byte {
	b := appendJSON(nil, c.doc, "\n", true)
	return append(b, '\n')
}

// ScratchCopier writes scratch copies. Write is the file writer; nil means
// exclusive create with mode 0600 (a copy never overwrites anything). Tests
// inject a faulty one to prove the read-back catches it.
type ScratchCopier struct {
	Write func(path string, data []byte) error
}

// WriteScratchCopy writes c's scratch copy to path with the default writer;
// see ScratchCopier.WriteCopy.
func WriteScratchCopy(c *Contract, path string) error {
	return ScratchCopier{}.WriteCopy(c, path)
}

// WriteCopy renders the copy, checks in memory that it is within 4 MiB and
// reads back as the same catalogue (catalogue-malformed otherwise: the
// document cannot be carried), writes it, reads the file back with the
// loader the server uses and compares (catalogue-copy-differs otherwise,
// to whose message a run adds what it had already done).
func (s ScratchCopier) WriteCopy(c *Contract, path string) error {
	data := c.CopyBytes()
	if len(data) > MaxContractBytes {
		return exit.Refuse(RefuseMalformed, "the tool contract %s would make a scratch copy of %d bytes, past the 4 MiB (%d bytes) limit; make the contract smaller", c.Source, len(data), MaxContractBytes)
	}
	back, err := ParseContract(path, data)
	if err != nil {
		return exit.Wrap(RefuseMalformed, err, "the tool contract %s would not read back from its scratch copy; simplify the strings or keys the reader cannot carry", c.Source)
	}
	if eq, where := c.Equal(back); !eq {
		return exit.Refuse(RefuseMalformed, "the tool contract %s would not read back as the same catalogue from its scratch copy (it differs at %s); simplify that value", c.Source, orRoot(where))
	}
	differs := func(what string, err error) error {
		return exit.Wrap(RefuseCopyDiffers, err, "the scratch copy %s of %s %s", path, c.Source, what)
	}
	write := s.Write
	if write == nil {
		write = func(path string, data []byte) error { return newfile.Write(path, data, 0o600) }
	}
	if err := write(path, data); err != nil {
		return differs("could not be written", err)
	}
	back, err = LoadContract(path)
	if err != nil {
		return differs("does not read back as the checked catalogue", err)
	}
	if eq, where := c.Equal(back); !eq {
		return differs("reads back as a different catalogue (at "+orRoot(where)+")", nil)
	}
	return nil
}

func orRoot(where string) string {
	if where == "" {
		return "the document root"
	}
	return where
}
