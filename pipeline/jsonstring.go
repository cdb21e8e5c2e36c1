package pipeline

import "encoding/json"

// AppendJSONString appends s as encoding/json writes a string, HTML
// escaping included: plain ASCII as it is, anything else through
// encoding/json itself. Hand-written encodings of large records (a plan's
// cells and fixtures, a run folder's root) use it to give encoding/json's
// bytes exactly without its reflection.
func AppendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
