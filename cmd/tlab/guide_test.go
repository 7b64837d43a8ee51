package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestGuideContentsListsEveryHeading: the guide's contents list names
// every ## heading in order, each linked by the anchor GitHub makes of it
// (lower case; punctuation other than - and _ removed; each space a -).
func TestGuideContentsListsEveryHeading(t *testing.T) {
	doc, err := os.ReadFile("../../docs/guide.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "## Contents\n")
	if !ok {
		t.Fatal("docs/guide.md has no ## Contents")
	}
	list, body, _ := strings.Cut(rest, "\n## ")
	body = "## " + body
	var want []string
	for _, h := range regexp.MustCompile(`(?m)^## (.+)$`).FindAllStringSubmatch(body, -1) {
		want = append(want, "- ["+h[1]+"](#"+githubAnchor(h[1])+")")
	}
	var got []string
	for _, l := range strings.Split(list, "\n") {
		if strings.HasPrefix(l, "- [") {
			got = append(got, l)
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the contents list:\n%s\nwant, from the headings:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A hand-worked anchor: GitHub's for the remote section.
	if a := githubAnchor("Across a real network: `tlab agent` and `--remote`"); a != "across-a-real-network-tlab-agent-and---remote" {
		t.Errorf("anchor %q", a)
	}
}

func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}
