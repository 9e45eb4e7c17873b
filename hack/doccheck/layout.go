package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// layoutHead starts the README's layout table.
const layoutHead = "## Layout"

var backticked = regexp.MustCompile("`([^`]+)`")

// layoutRow is one row of the layout table: the folders its first cell
// names, and every backticked word in the row.
type layoutRow struct {
	Folders []string
	Words   map[string]bool
}

// readLayout returns the rows of the README's layout table.
func readLayout(readmeText string) ([]layoutRow, error) {
	_, rest, ok := strings.Cut(readmeText, "\n"+layoutHead+"\n")
	if !ok {
		return nil, fmt.Errorf("%s has no %q section", readme, layoutHead)
	}
	var rows []layoutRow
	inTable := false
	for _, line := range strings.Split(rest, "\n") {
		if !strings.HasPrefix(line, "|") {
			if inTable || strings.HasPrefix(line, "## ") {
				break
			}
			continue
		}
		inTable = true
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) < 2 || strings.HasPrefix(strings.TrimSpace(cells[0]), "---") || strings.TrimSpace(cells[0]) == "folder" {
			continue
		}
		row := layoutRow{Words: map[string]bool{}}
		for _, m := range backticked.FindAllStringSubmatch(cells[0], -1) {
			row.Folders = append(row.Folders, strings.TrimSuffix(m[1], "/"))
		}
		for _, m := range backticked.FindAllStringSubmatch(line, -1) {
			row.Words[strings.TrimSuffix(m[1], "/")] = true
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: the %q section has no table", readme, layoutHead)
	}
	return rows, nil
}

// goFolders returns every folder under root that holds a .go file, relative
// to root, leaving out testdata, bin, dist and hidden folders.
func goFolders(root string) ([]string, error) {
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "bin" || name == "dist" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") {
			rel, err := filepath.Rel(root, filepath.Dir(path))
			if err != nil {
				return err
			}
			seen[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walk %s: %w", root, err)
	}
	out := make([]string, 0, len(seen))
	for dir := range seen {
		out = append(out, dir)
	}
	sort.Strings(out)
	return out, nil
}

// covered reports whether the layout table lists dir: a first cell names
// it, or the row of a folder above it names, in backticks, dir or a folder
// between the two, relative to that folder.
func covered(rows []layoutRow, dir string) bool {
	for _, row := range rows {
		for _, f := range row.Folders {
			if f == dir {
				return true
			}
			rel, ok := strings.CutPrefix(dir, f+"/")
			if !ok {
				continue
			}
			for p := rel; p != "."; p = filepath.ToSlash(filepath.Dir(p)) {
				if row.Words[p] {
					return true
				}
			}
		}
	}
	return false
}

// checkLayout fails for each Go folder the README's layout table leaves
// out and each folder it names that does not exist.
func checkLayout(root string) error {
	text, err := os.ReadFile(filepath.Join(root, readme))
	if err != nil {
		return err
	}
	rows, err := readLayout(string(text))
	if err != nil {
		return err
	}
	dirs, err := goFolders(root)
	if err != nil {
		return err
	}
	var errs []error
	for _, dir := range dirs {
		if dir != "." && !covered(rows, dir) {
			errs = append(errs, fmt.Errorf("%s: the layout table leaves out %s/ (Go package folder); add it to a row", readme, dir))
		}
	}
	for _, row := range rows {
		for _, f := range row.Folders {
			if _, err := os.Stat(filepath.Join(root, f)); err != nil {
				errs = append(errs, fmt.Errorf("%s: the layout table names %s, which does not exist", readme, f))
			}
		}
	}
	return errors.Join(errs...)
}
