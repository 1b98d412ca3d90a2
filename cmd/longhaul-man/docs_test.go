package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// repoRoot is the repository, from this package's directory.
const repoRoot = "../.."

// TestEveryCommandHasAPage: every command of the tree (help and
// completion aside) has a hand-written page under docs/ (guides: a file,
// or a file and an anchor in it), and that page links the command's
// generated flag reference; guides names no command the tree lacks.
func TestEveryCommandHasAPage(t *testing.T) {
	seen := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		seen[c.CommandPath()] = true
		guide, ok := guides[c.CommandPath()]
		if !ok {
			t.Errorf("%s has no hand-written page: write one under docs/ and name it in guides", c.CommandPath())
		}
		if ok && c.HasParent() {
			file, anchor, _ := strings.Cut(guide, "#")
			page := filepath.Join(repoRoot, "docs", file)
			b, err := os.ReadFile(page)
			if err != nil {
				t.Errorf("%s: its page: %v", c.CommandPath(), err)
			} else {
				if anchor != "" && !headingAnchors(string(b))[anchor] {
					t.Errorf("%s: %s has no heading #%s", c.CommandPath(), file, anchor)
				}
				if ref := "commands/" + markdownName(c); !strings.Contains(string(b), "]("+ref+")") {
					t.Errorf("%s: %s does not link its flag reference %s", c.CommandPath(), file, ref)
				}
			}
		}
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() {
				walk(sub)
			}
		}
	}
	walk(tree())
	for path := range guides {
		if !seen[path] {
			t.Errorf("guides names %q, which is no command of the tree", path)
		}
	}
	if seen["longhaul help"] || seen["longhaul completion"] {
		t.Error("help or completion counted as a command with a page")
	}
}

// TestDocsLinks: every relative link of README.md and the pages under
// docs/ (the generated ones too) names a file of the repository that
// exists, and a #anchor names a heading of that file (as GitHub makes
// anchors from headings). A link out of the repository is an error: the
// docs must be read from it alone.
func TestDocsLinks(t *testing.T) {
	pages := []string{filepath.Join(repoRoot, "README.md")}
	for _, glob := range []string{"docs/*.md", "docs/commands/*.md"} {
		more, _ := filepath.Glob(filepath.Join(repoRoot, glob))
		pages = append(pages, more...)
	}
	if len(pages) < 20 {
		t.Fatalf("found %d pages: run from cmd/longhaul-man", len(pages))
	}
	root, _ := filepath.Abs(repoRoot)
	checked := 0
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repoRoot, page)
		for _, l := range markdownLinks(string(b)) {
			checked++
			if msg := checkLink(root, page, l.target); msg != "" {
				t.Errorf("%s:%d: link %q: %s", rel, l.line, l.target, msg)
			}
		}
	}
	if checked < 100 {
		t.Errorf("checked %d links: the link parser lost some", checked)
	}
}

// checkLink says what is wrong with a link from page, or "".
func checkLink(root, page, target string) string {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return ""
	}
	file, anchor, _ := strings.Cut(target, "#")
	path := page
	if file != "" {
		path = filepath.Join(filepath.Dir(page), filepath.FromSlash(file))
	}
	abs, _ := filepath.Abs(path)
	if abs != root && !strings.HasPrefix(abs, root+string(filepath.Separator)) {
		return "outside the repository"
	}
	st, err := os.Stat(path)
	if err != nil {
		return "no such file"
	}
	if anchor == "" {
		return ""
	}
	if st.IsDir() || !strings.HasSuffix(path, ".md") {
		return "an anchor into what is not a Markdown page"
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if !headingAnchors(string(b))[anchor] {
		return "no heading with that anchor"
	}
	return ""
}

type mdLink struct {
	line   int
	target string
}

var (
	linkRE = regexp.MustCompile(`\]\(([^()\s]+)(?:\s+"[^"]*")?\)`)
	codeRE = regexp.MustCompile("`[^`]*`")
)

// markdownLinks returns the inline links of a Markdown text, leaving out
// code: fenced blocks, indented blocks and code spans.
func markdownLinks(text string) []mdLink {
	var out []mdLink
	for i, line := range proseLines(text) {
		if line == "" {
			continue
		}
		for _, m := range linkRE.FindAllStringSubmatch(codeRE.ReplaceAllString(line, ""), -1) {
			out = append(out, mdLink{i + 1, m[1]})
		}
	}
	return out
}

// proseLines returns text's lines with those of code blocks blanked, so
// that indexes stay line numbers.
func proseLines(text string) []string {
	lines := strings.Split(text, "\n")
	fenced, indented := false, false
	for i, line := range lines {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "```"):
			fenced = !fenced
			lines[i] = ""
		case fenced:
			lines[i] = ""
		case strings.HasPrefix(line, "    ") || strings.HasPrefix(line, "\t"):
			// An indented block starts after a blank line; inside a list
			// item an indented line continues the item.
			if indented || (i > 0 && strings.TrimSpace(lines[i-1]) == "") {
				indented = true
				lines[i] = ""
			}
		default:
			indented = indented && trimmed == ""
		}
	}
	return lines
}

var headingRE = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)

// headingAnchors returns the anchors GitHub gives a page's headings: the
// text as rendered (code spans' text, links' text), lower case, without
// punctuation but hyphens and underscores, spaces as hyphens, and -1, -2
// on repeats.
func headingAnchors(text string) map[string]bool {
	out := map[string]bool{}
	count := map[string]int{}
	link := regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	for _, line := range proseLines(text) {
		m := headingRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		h := link.ReplaceAllString(m[1], "$1")
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case unicode.IsLetter(r) || unicode.IsNumber(r) || r == '_' || r == '-':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		slug := b.String()
		if n := count[slug]; n > 0 {
			out[slug+"-"+strconv.Itoa(n)] = true
		} else {
			out[slug] = true
		}
		count[slug]++
	}
	return out
}

// TestLinkChecker: the anchors are GitHub's, and a link that misses is
// reported.
func TestLinkChecker(t *testing.T) {
	a := headingAnchors("# `longhaul plan`, `apply`: change a host\n\n## Fleets: `plan --emit` and `audit --against`\n\n" +
		"```\n## not a heading\n```\n\n### [`test URL`](x.md): a download, 100%\n## Exit status\n## Exit status\n")
	for _, want := range []string{"longhaul-plan-apply-change-a-host", "fleets-plan---emit-and-audit---against", "test-url-a-download-100", "exit-status", "exit-status-1"} {
		if !a[want] {
			t.Errorf("no anchor %q in %v", want, a)
		}
	}
	if a["not-a-heading"] {
		t.Error("a line of a code block made an anchor")
	}
	links := markdownLinks("see [a](a.md) and `[b](b.md)`\n\n    [c](c.md)\n\n- item\n  [d](d.md#x)\n")
	if len(links) != 2 || links[0].target != "a.md" || links[1].target != "d.md#x" || links[1].line != 6 {
		t.Errorf("links: %+v", links)
	}
	root, _ := os.Getwd()
	page := filepath.Join(root, "main.go")
	for target, want := range map[string]string{
		"main_test.go":            "",
		"docs_test.go#x":          "an anchor into what is not a Markdown page",
		"nothing.go":              "no such file",
		"../longhaul-man/main.go": "",
		"../longhaul/main.go":     "outside the repository",
		"https://example.net/x":   "",
	} {
		if got := checkLink(root, page, target); got != want {
			t.Errorf("checkLink(%q) = %q, want %q", target, got, want)
		}
	}
	dir := t.TempDir()
	md := filepath.Join(dir, "a.md")
	if err := os.WriteFile(md, []byte("# A\n\n## Exit status\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := checkLink(dir, md, "#exit-status"); got != "" {
		t.Errorf("#exit-status: %q", got)
	}
	if got := checkLink(dir, md, "a.md#exit"); got != "no heading with that anchor" {
		t.Errorf("a.md#exit: %q", got)
	}
}

// TestDocsFlagsExist: the hand-written pages and README name only flags
// the commands have. In a command line (`longhaul CMD ...`, in code or
// prose) each flag must be CMD's; any other --flag must be some
// command's, or in notOurs: another program's, or a family of ours
// (--up-*).
func TestDocsFlagsExist(t *testing.T) {
	notOurs := map[string]bool{
		"--syntax-check": true, "--clamp-mss-to-pmtu": true, "--variant": true, "--always": true, "--dirty": true, // ansible-playbook, iptables, debootstrap, git describe
		"--up-": true, "--down-": true, "--probe-": true,
	}
	root := tree()
	all := map[string]bool{"--help": true, "--version": true}
	cmds := map[string]*cobra.Command{}
	for _, c := range root.Commands() {
		cmds[c.Name()] = c
		c.Flags().VisitAll(func(f *pflag.Flag) { all["--"+f.Name] = true })
	}
	pages, _ := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	pages = append(pages, filepath.Join(repoRoot, "README.md"))
	cmdLine := regexp.MustCompile("longhaul ([a-z][a-z0-9-]*)((?: +[^ |#`;&(),]+)*)")
	flagTok := regexp.MustCompile(`^\[*(--?[A-Za-z][A-Za-z0-9-]*)`)
	anyFlag := regexp.MustCompile(`(?:^|[^\w-])(--[a-z][a-z0-9-]+)`)
	lines := 0
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repoRoot, page)
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range cmdLine.FindAllStringSubmatch(line, -1) {
				c := cmds[m[1]]
				if c == nil {
					continue
				}
				lines++
				for _, tok := range strings.Fields(m[2]) {
					if tok == "--" {
						break // what follows is emulate's command
					}
					f := flagTok.FindStringSubmatch(tok)
					if f == nil {
						continue
					}
					if !hasFlag(c, f[1]) {
						t.Errorf("%s:%d: longhaul %s has no flag %s: %s", rel, i+1, c.Name(), f[1], strings.TrimSpace(line))
					}
				}
			}
			for _, m := range anyFlag.FindAllStringSubmatch(line, -1) {
				if !all[m[1]] && !notOurs[m[1]] {
					t.Errorf("%s:%d: no command has a flag %s", rel, i+1, m[1])
				}
			}
		}
	}
	if lines < 100 {
		t.Errorf("found %d command lines: the parser lost some", lines)
	}
}

// hasFlag reports whether c takes flag ("--name" or "-x").
func hasFlag(c *cobra.Command, flag string) bool {
	if name, ok := strings.CutPrefix(flag, "--"); ok {
		return name == "help" || c.Flags().Lookup(name) != nil
	}
	short := strings.TrimPrefix(flag, "-")
	return short == "h" || (len(short) == 1 && c.Flags().ShorthandLookup(short) != nil)
}
