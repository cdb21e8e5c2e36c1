package grade_test

import (
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"testing"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// TestMarkdownKnownAnswers holds the bullets and task-graph readings to
// the answers chrisbanes/skills' text validator (evals/validators/
// text_case.py) gives on the same texts, recorded in
// testdata/markdown_known.json: masked code, comments, tags and link
// titles, continuation lines, CRLF, tabs, images and escaped links; task
// graphs with cycles, missing edges, bad numbering, malformed lists,
// fenced headings and section boundaries.
func TestMarkdownKnownAnswers(t *testing.T) {
	raw, err := os.ReadFile("testdata/markdown_known.json")
	if err != nil {
		t.Fatal(err)
	}
	var items []struct {
		Kind    string          `json:"kind"`
		Text    string          `json:"text"`
		Heading string          `json:"heading"`
		Pattern string          `json:"pattern"`
		Rules   map[string]any  `json:"rules"`
		Want    json.RawMessage `json:"want"`
	}
	if err := json.Unmarshal(raw, &items); err != nil {
		t.Fatal(err)
	}
	for i, it := range items {
		var got any
		switch it.Kind {
		case "bullets":
			got = grade.MarkdownBullets(it.Text, it.Heading)
			if got.([]string) == nil {
				got = []string{}
			}
		case "link":
			got = grade.VisibleLink(it.Text, regexp.MustCompile("(?i)"+it.Pattern))
		case "graph":
			var tg suite.TaskGraphCheck
			if edges, ok := it.Rules["required_edges"].([]any); ok {
				for _, e := range edges {
					pair := e.([]any)
					tg.RequiredEdges = append(tg.RequiredEdges, [2]string{pair[0].(string), pair[1].(string)})
				}
			}
			tg.Acyclic, _ = it.Rules["require_acyclic"].(bool)
			f := grade.TaskGraphFailures(it.Text, tg)
			if f == nil {
				f = []string{}
			}
			got = f
		}
		want := reflect.New(reflect.TypeOf(got)).Interface()
		if err := json.Unmarshal(it.Want, want); err != nil {
			t.Fatal(err)
		}
		if w := reflect.ValueOf(want).Elem().Interface(); !reflect.DeepEqual(got, w) {
			t.Errorf("item %d (%s):\n got %q\nwant %q", i, it.Kind, got, w)
		}
	}
}
