package suite

import "fmt"

// checkTrajectory checks a trajectory assertion's own rules: what a
// command check asks is coherent, a step names a tool or a command, and
// every regular expression compiles.
func checkTrajectory(c *checker, a Assertion) error {
	var res []*string
	if cc := a.Commands; cc != nil {
		if cc.None && (cc.Matches != nil || cc.NotMatches != nil || cc.Unless != nil || cc.Succeeded) {
			return fmt.Errorf("commands: none: true checks that no command ran: it takes no matches, notMatches, unless or succeeded")
		}
		if !cc.None && cc.Matches == nil && cc.NotMatches == nil {
			return fmt.Errorf("commands checks nothing: add matches, notMatches or none: true")
		}
		if cc.Unless != nil && cc.NotMatches == nil {
			return fmt.Errorf("commands: unless exempts from notMatches, which is missing")
		}
		if cc.Succeeded && cc.Matches == nil {
			return fmt.Errorf("commands: succeeded applies to matches, which is missing")
		}
		res = append(res, cc.Matches, cc.NotMatches, cc.Unless)
	}
	if t := a.Tool; t != nil {
		name := ToolNamePattern(t.Name)
		res = append(res, &name)
		if t.Args != nil {
			res = append(res, t.Args.Matches, t.Args.NotMatches)
		}
	}
	for i, st := range a.Sequence {
		if (st.Tool == "") == (st.Command == "") {
			return fmt.Errorf("sequence step %d needs exactly one of tool or command", i)
		}
		if st.Command != "" && st.Args != nil {
			return fmt.Errorf("sequence step %d: args applies to a tool step; a command step's pattern is its command", i)
		}
		if st.Tool != "" {
			name := ToolNamePattern(st.Tool)
			res = append(res, &name)
		} else {
			res = append(res, &st.Command)
		}
		if st.Args != nil {
			res = append(res, st.Args.Matches, st.Args.NotMatches)
		}
	}
	for _, re := range res {
		if re == nil {
			continue
		}
		if err := c.compile(*re); err != nil {
			return fmt.Errorf("invalid regular expression %q: %v", *re, err)
		}
	}
	return nil
}

// ToolNamePattern is the RE2 expression a tool name must match, whole,
// for a trajectory check naming name.
func ToolNamePattern(name string) string {
	return "^(?:" + name + ")$"
}
