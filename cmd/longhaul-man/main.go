// Command longhaul-man writes longhaul's man pages, one per command
// (longhaul.1, longhaul-plan.1, ...), generated from the command tree
// itself so --help and man never disagree: make man, make deb. With
// -markdown it writes the same reference as Markdown instead, one page
// per command (longhaul_plan.md, ...), checked in under docs/commands:
// make docs.
//
//	go run ./cmd/longhaul-man -o DIR [-version V]
//	go run ./cmd/longhaul-man -markdown DIR
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/longhaul/longhaul/internal/cli"
	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

func main() {
	dir := flag.String("o", "man", "directory to write the pages to")
	version := flag.String("version", "", "version named in the pages' footer (default: the build's)")
	markdown := flag.String("markdown", "", "write the Markdown reference (docs/commands) to this directory instead of the man pages")
	flag.Parse()
	var err error
	if *markdown != "" {
		err = writeMarkdown(*markdown)
	} else {
		err = run(*dir, *version)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "longhaul-man: %v\n", err)
		os.Exit(1)
	}
}

func run(dir, version string) error {
	if version == "" {
		version = cli.Build().Version
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	root := tree()
	date := time.Unix(0, 0).UTC()
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		var sec int64
		if _, err := fmt.Sscan(s, &sec); err == nil {
			date = time.Unix(sec, 0).UTC()
		}
	}
	header := &doc.GenManHeader{Title: "LONGHAUL", Section: "1", Source: "longhaul " + version, Manual: "longhaul manual", Date: &date}
	if err := doc.GenManTree(root, header, dir); err != nil {
		return fmt.Errorf("write man pages to %s: %w", dir, err)
	}
	return addSections(root, dir)
}

// tree is the command tree as --help shows it: with the flags cobra adds
// when a command runs (--help, --version), without a generation date.
func tree() *cobra.Command {
	root := cli.Command()
	root.InitDefaultVersionFlag()
	var help func(*cobra.Command)
	help = func(c *cobra.Command) {
		c.InitDefaultHelpFlag()
		for _, sub := range c.Commands() {
			help(sub)
		}
	}
	help(root)
	root.DisableAutoGenTag = true // no generation date: reproducible pages
	return root
}

// addSections puts the sections cobra does not write (EXIT STATUS, FILES,
// ENVIRONMENT) into every page, before SEE ALSO, as man-pages(7) orders
// them.
func addSections(c *cobra.Command, dir string) error {
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() {
			if err := addSections(sub, dir); err != nil {
				return err
			}
		}
	}
	name := filepath.Join(dir, strings.ReplaceAll(c.CommandPath(), " ", "-")+".1")
	b, err := os.ReadFile(name)
	if err != nil {
		return fmt.Errorf("add sections: %w", err)
	}
	var extra strings.Builder
	for _, s := range cli.ManSections(c.CommandPath()) {
		extra.WriteString(s.Roff())
	}
	page := string(b)
	if i := strings.Index(page, ".SH SEE ALSO"); i >= 0 {
		page = page[:i] + extra.String() + page[i:]
	} else {
		page += extra.String()
	}
	return os.WriteFile(name, []byte(page), 0o644)
}
