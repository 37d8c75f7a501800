package crypt

import (
	"fmt"
	"strings"
)

// crypttab lines are "NAME DEVICE KEYFILE OPTIONS"; diskprep's own are
// marked, as its fstab lines are, by the comment line before them.

func crypttabMarker(name, date string) string {
	return fmt.Sprintf("# diskprep: %s added %s (\"diskprep release\" removes this entry)", name, date)
}

func crypttabFields(line string) []string {
	t := strings.TrimSpace(line)
	if t == "" || strings.HasPrefix(t, "#") {
		return nil
	}
	return strings.Fields(t)
}

// crypttabEntry finds the entry for the mapping name: its line, and
// whether diskprep's marker is above it.
func crypttabEntry(data, name string) (line string, managed, ok bool) {
	lines := strings.Split(data, "\n")
	for i, l := range lines {
		if f := crypttabFields(l); len(f) > 0 && f[0] == name {
			return l, i > 0 && strings.HasPrefix(lines[i-1], "# diskprep: "+name+" "), true
		}
	}
	return "", false, false
}

// sameCrypttabLine compares two entries field by field (spacing aside).
func sameCrypttabLine(a, b string) bool {
	return strings.Join(crypttabFields(a), " ") == strings.Join(crypttabFields(b), " ")
}

// addCrypttab returns data with line added under diskprep's marker, and
// whether that changed it; an entry of the same name that differs is an
// error (planning refuses it first).
func addCrypttab(data, line, date string) (string, bool, error) {
	name := crypttabFields(line)[0]
	if have, _, ok := crypttabEntry(data, name); ok {
		if sameCrypttabLine(have, line) {
			return data, false, nil
		}
		return data, false, fmt.Errorf("crypttab already has %s as %q", name, strings.TrimSpace(have))
	}
	if data != "" && !strings.HasSuffix(data, "\n") {
		data += "\n"
	}
	return data + crypttabMarker(name, date) + "\n" + line + "\n", true, nil
}

// removeCrypttab drops diskprep's entry for name and its marker; an entry
// without the marker stays (it is the admin's).
func removeCrypttab(data, name string) (string, bool) {
	lines := strings.Split(data, "\n")
	for i, l := range lines {
		if f := crypttabFields(l); len(f) > 0 && f[0] == name {
			if i == 0 || !strings.HasPrefix(lines[i-1], "# diskprep: "+name+" ") {
				return data, false
			}
			out := append(append([]string(nil), lines[:i-1]...), lines[i+1:]...)
			return strings.Join(out, "\n"), true
		}
	}
	return data, false
}
