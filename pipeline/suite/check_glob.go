package suite

import "fmt"

// checkGlobAssertion checks a glob assertion's fields (content: it has a content
// condition) and compiles a bullets check's expressions.
func checkGlobAssertion(c *checker, a Assertion, content bool) error {
	if a.Count != nil && a.Glob == nil {
		return fmt.Errorf("count applies to glob assertions only")
	}
	if a.Glob != nil && a.Count == nil && !content {
		return fmt.Errorf("glob assertion %q checks nothing: add count, contains, notContains, matches, notMatches, bullets or taskGraph", *a.Glob)
	}
	if a.Bullets != nil {
		for _, re := range append(append([]string{}, a.Bullets.Matches...), a.Bullets.Links...) {
			if err := c.compile(re); err != nil {
				return fmt.Errorf("invalid regular expression %q: %v", re, err)
			}
		}
	}
	return nil
}
