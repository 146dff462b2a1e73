package benchenv

import (
	"fmt"
	"io"
	"strings"
)

// Table writes one Markdown table; a column name ending in ">" is
// right-aligned (the ">" is not printed).
type Table struct {
	w    io.Writer
	cols int
}

// NewTable writes the header and the alignment row of a table to w.
func NewTable(w io.Writer, cols ...string) *Table {
	names := make([]string, len(cols))
	align := make([]string, len(cols))
	for i, c := range cols {
		name, right := strings.CutSuffix(c, ">")
		names[i], align[i] = name, "---"
		if right {
			align[i] = "---:"
		}
	}
	fmt.Fprintf(w, "| %s |\n|%s|\n", strings.Join(names, " | "), strings.Join(align, "|"))
	return &Table{w: w, cols: len(cols)}
}

// Row writes one row; each cell is printed with %v, missing cells empty.
func (t *Table) Row(cells ...any) {
	s := make([]string, t.cols)
	for i := range min(len(cells), t.cols) {
		s[i] = fmt.Sprint(cells[i])
	}
	fmt.Fprintf(t.w, "| %s |\n", strings.Join(s, " | "))
}

// Rowf writes one row: format's "|"-separated cells filled with args.
func (t *Table) Rowf(format string, args ...any) {
	fmt.Fprintf(t.w, "| "+format+" |\n", args...)
}
