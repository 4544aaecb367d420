package operator

import "encoding/json"

// PrincipalFields are the fields of a principal a CLI prints (whoami,
// doctor, service-account list and create), in this order; whatever else a
// record carries (a password's or a key's hash, a later server's field) is
// never shown, in any output mode.
var PrincipalFields = []string{"id", "kind", "username", "name", "role", "capabilities", "boundHostId", "allowedRepositoryIds"}

// AccountFields are PrincipalFields and a service account's createdAt.
var AccountFields = append(append([]string(nil), PrincipalFields...), "createdAt")

// Allowlisted are the members of record named by fields, in the order of
// fields; a field the record lacks is left out.
func Allowlisted(record json.RawMessage, fields []string) ([]Member, error) {
	members, err := Members(record)
	if err != nil {
		return nil, err
	}
	var out []Member
	for _, f := range fields {
		for _, m := range members {
			if m.Key == f {
				out = append(out, m)
				break
			}
		}
	}
	return out, nil
}
