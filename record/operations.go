package record

// Operations is the closed neutral operation vocabulary (reference notes
// §5.1), in the order capabilities renders it. A frame admits operations
// from this list; tool.requested.operations holds names from it.
var Operations = []string{
	"file.read", "file.write", "file.edit", "dir.list", "search", "shell",
	"web.read", "skill.load", "subagent.spawn", "task.todo", "mcp.call",
}

// IsOperation reports whether op is in the vocabulary.
func IsOperation(op string) bool {
	for _, o := range Operations {
		if o == op {
			return true
		}
	}
	return false
}
