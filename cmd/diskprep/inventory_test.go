package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/golden"
)

func testEnv(format, root string) (*env, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return &env{Stdout: &out, Stderr: &errb, Stdin: strings.NewReader(""), Format: format, Root: root}, &out, &errb
}

func TestInventoryFixtures(t *testing.T) {
	for _, fixture := range []string{"desktop-nvme-sata", "vmware-rdm", "kvm-virtio", "qemu-guest", "guest-stacks"} {
		root := filepath.Join("..", "..", "hwinfo", "testdata", fixture)
		for format, ext := range map[string]string{"table": "txt", "json": "json", "markdown": "md"} {
			t.Run(fixture+"/"+format, func(t *testing.T) {
				e, out, _ := testEnv(format, root)
				if err := runInventory(context.Background(), inventoryOptions{}, e); err != nil {
					t.Fatal(err)
				}
				checkGolden(t, "inventory/"+fixture+"."+ext, out.Bytes())
			})
		}
	}
}

// The JSON is the contract other tools read: check the schema and the facts
// a reader needs, not only the golden bytes.
func TestInventoryJSONContract(t *testing.T) {
	e, out, _ := testEnv("json", filepath.Join("..", "..", "hwinfo", "testdata", "desktop-nvme-sata"))
	if err := runInventory(context.Background(), inventoryOptions{}, e); err != nil {
		t.Fatal(err)
	}
	var h hwinfo.Host
	if err := json.Unmarshal(out.Bytes(), &h); err != nil {
		t.Fatal(err)
	}
	if h.Schema != hwinfo.Schema {
		t.Errorf("schema %q", h.Schema)
	}
	d, _ := h.Device("nvme0n1")
	if d == nil || !d.System || d.Media != "nvme" {
		t.Errorf("nvme0n1 = %+v; want a system NVMe disk", d)
	}
	s, _ := h.Device("sda")
	if s == nil || s.System || s.Transport != "sata" || s.Media != "hdd" {
		t.Errorf("sda = %+v; want a non-system SATA HDD", s)
	}
	var raw map[string]any
	json.Unmarshal(out.Bytes(), &raw)
	disk := raw["disks"].([]any)[0].(map[string]any)
	for _, k := range []string{"size_bytes", "logical_sector_bytes", "physical_sector_bytes"} {
		if _, ok := disk[k]; !ok {
			t.Errorf("disk JSON lacks %q (units belong in field names)", k)
		}
	}
}

func TestInventoryBadInput(t *testing.T) {
	e, _, _ := testEnv("yaml", "")
	err := runInventory(context.Background(), inventoryOptions{}, e)
	if exitCode(err) != exitUsage || !strings.Contains(err.Error(), "table, json, markdown") {
		t.Errorf("unknown format: %v (exit %d)", err, exitCode(err))
	}
	for _, args := range [][]string{
		{"diskprep", "inventory", "--root", "/nonexistent"},
		{"diskprep", "--root", "/etc/hostname", "inventory"},
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, strings.NewReader(""), &out, &errb); code != exitFailure {
			t.Errorf("%q: exit %d, want 1", args, code)
		}
		if strings.Count(errb.String(), "\n") != 1 || out.Len() != 0 {
			t.Errorf("%q: stdout %q stderr %q", args, out.String(), errb.String())
		}
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"diskprep", "inventory", "-o", "yaml"}, strings.NewReader(""), &out, &errb); code != exitUsage {
		t.Errorf("-o yaml: exit %d", code)
	}
}

// On the live machine (CI): the disk holding / is listed with its size and
// marked system, in every format and in both flag orders.
func TestInventoryLive(t *testing.T) {
	for _, args := range [][]string{
		{"diskprep", "-o", "json", "inventory"},
		{"diskprep", "inventory", "-o", "json"},
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("%q: exit %d: %s", args, code, errb.String())
		}
		var h hwinfo.Host
		if err := json.Unmarshal(out.Bytes(), &h); err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		system := 0
		for _, d := range h.Disks {
			if d.System {
				system++
				size, err := os.ReadFile(filepath.Join("/sys/block", d.Name, "size"))
				if err != nil {
					t.Fatal(err)
				}
				sectors, err := strconv.ParseUint(strings.TrimSpace(string(size)), 10, 64)
				if err != nil || sectors*512 != d.SizeBytes {
					t.Errorf("%s size %d, sysfs says %d sectors", d.Name, d.SizeBytes, sectors)
				}
			}
		}
		if system == 0 {
			t.Errorf("%q: no disk marked system", args)
		}
	}
}

// checkGolden compares got with testdata/name (go test -update rewrites it).
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", name), got)
}
