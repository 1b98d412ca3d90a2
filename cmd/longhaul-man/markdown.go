package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/longhaul/longhaul/internal/cli"
	"github.com/spf13/cobra"
)

// guides names each command's hand-written page under docs/ (a file, or
// a file and an anchor): what the command does, examples, its output.
// The generated flag reference links to it, and the tests check that
// every command of the tree has one and that it exists.
var guides = map[string]string{
	"longhaul":           "../README.md#commands",
	"longhaul analyze":   "analyze.md",
	"longhaul apply":     "apply.md",
	"longhaul audit":     "audit.md",
	"longhaul calc":      "calc.md",
	"longhaul emulate":   "emulate.md",
	"longhaul exporter":  "exporter.md",
	"longhaul flows":     "flows.md",
	"longhaul lab":       "lab.md",
	"longhaul mesh-cost": "mesh-cost.md",
	"longhaul plan":      "plan.md",
	"longhaul report":    "report.md",
	"longhaul rollback":  "apply.md#rollback",
	"longhaul serve":     "serve.md",
	"longhaul test":      "test.md",
	"longhaul verify":    "verify.md",
	"longhaul version":   "version.md",
}

// markdownName is the file of a command's generated reference:
// longhaul_plan.md for "longhaul plan".
func markdownName(c *cobra.Command) string {
	return strings.ReplaceAll(c.CommandPath(), " ", "_") + ".md"
}

// writeMarkdown writes the flag reference of every command, one page
// each, into dir (docs/commands in the repository): the same text as
// --help and the man pages, and the man pages' EXIT STATUS, FILES and
// ENVIRONMENT. Pages of commands no longer in the tree are removed.
func writeMarkdown(dir string) error {
	if runtime.GOOS != "linux" {
		return fmt.Errorf("-markdown writes the Linux command tree: run it on Linux (this build has %s's)", runtime.GOOS)
	}
	pages, err := markdownPages(tree())
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	old, _ := filepath.Glob(filepath.Join(dir, "longhaul*.md"))
	for _, name := range old {
		if _, ok := pages[filepath.Base(name)]; !ok {
			if err := os.Remove(name); err != nil {
				return err
			}
		}
	}
	for name, text := range pages {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// markdownPages renders the page of c and of each available command
// below it, by file name.
func markdownPages(c *cobra.Command) (map[string]string, error) {
	guide, ok := guides[c.CommandPath()]
	if !ok {
		return nil, fmt.Errorf("%s has no hand-written page: add it to guides in cmd/longhaul-man", c.CommandPath())
	}
	pages := map[string]string{markdownName(c): markdownPage(c, guide)}
	for _, sub := range c.Commands() {
		if !sub.IsAvailableCommand() {
			continue
		}
		more, err := markdownPages(sub)
		if err != nil {
			return nil, err
		}
		for k, v := range more {
			pages[k] = v
		}
	}
	return pages, nil
}

// markdownPage is one command's reference. The help text is shown as
// --help prints it, in code blocks: it is written for a terminal
// (aligned columns, <placeholders>) and Markdown would reflow it.
func markdownPage(c *cobra.Command, guide string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", c.CommandPath())
	fmt.Fprintf(&b, "<!-- Generated from the command tree by `make docs` (go run ./cmd/longhaul-man -markdown docs/commands): do not edit. -->\n\n")
	fmt.Fprintf(&b, "%s.\n\n", mdEscape(strings.TrimSuffix(c.Short, ".")))
	fmt.Fprintf(&b, "What it does, examples and its output: [%s](%s). The same text as `%s --help` and `man %s`.\n\n",
		guideTitle(guide), "../"+guide, c.CommandPath(), strings.ReplaceAll(c.CommandPath(), " ", "-"))
	if c.Runnable() {
		fmt.Fprintf(&b, "## Usage\n\n```\n%s\n```\n\n", c.UseLine())
	}
	if long := strings.TrimSpace(c.Long); long != "" {
		fmt.Fprintf(&b, "## Description\n\n```text\n%s\n```\n\n", long)
	}
	if ex := strings.TrimRight(c.Example, " \n"); ex != "" {
		fmt.Fprintf(&b, "## Examples\n\n```\n%s\n```\n\n", ex)
	}
	if f := c.NonInheritedFlags(); f.HasAvailableFlags() {
		fmt.Fprintf(&b, "## Flags\n\n```\n%s```\n\n", f.FlagUsages())
	}
	if f := c.InheritedFlags(); f.HasAvailableFlags() {
		fmt.Fprintf(&b, "## Flags of every command\n\n```\n%s```\n\n", f.FlagUsages())
	}
	if subs := available(c); len(subs) > 0 {
		b.WriteString("## Commands\n\n| command | what it does | flags |\n|---|---|---|\n")
		for _, s := range subs {
			fmt.Fprintf(&b, "| [`%s`](%s) | %s | [%s](%s) |\n", s.CommandPath(), "../"+guides[s.CommandPath()],
				mdEscape(s.Short), markdownName(s), markdownName(s))
		}
		b.WriteString("\n")
	}
	for _, s := range cli.ManSections(c.CommandPath()) {
		fmt.Fprintf(&b, "## %s\n\n| %s | meaning |\n|---|---|\n", sectionTitle(s.Title), sectionTerm[s.Title])
		for _, e := range s.Entries {
			fmt.Fprintf(&b, "| `%s` | %s |\n", e[0], mdEscape(e[1]))
		}
		b.WriteString("\n")
	}
	if c.HasParent() {
		fmt.Fprintf(&b, "## See also\n\n[longhaul](%s): every command. Exit statuses of all commands: [exit-status.md](../exit-status.md).\n",
			markdownName(c.Root()))
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// guideTitle names a guide link: the file as a path under docs/, with
// its anchor.
func guideTitle(guide string) string {
	if strings.HasPrefix(guide, "../") {
		return strings.TrimPrefix(guide, "../")
	}
	return "docs/" + guide
}

// available returns c's commands a user sees, by name.
func available(c *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	for _, s := range c.Commands() {
		if s.IsAvailableCommand() {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// sectionTerm heads the first column of a man section's table.
var sectionTerm = map[string]string{"EXIT STATUS": "status", "FILES": "file", "ENVIRONMENT": "variable"}

// sectionTitle is a man section's title as a Markdown heading: "EXIT
// STATUS" becomes "Exit status".
func sectionTitle(s string) string {
	s = strings.ToLower(s)
	return strings.ToUpper(s[:1]) + s[1:]
}

// mdEscape keeps text literal in a Markdown paragraph or table cell.
func mdEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, "|", `\|`, "*", `\*`, "_", `\_`, "<", `\<`, ">", `\>`, "`", "\\`", "[", `\[`, "]", `\]`)
	return r.Replace(s)
}
