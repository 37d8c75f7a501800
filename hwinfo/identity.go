package hwinfo

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/jaypipes/ghw"
)

// ghwArgs points ghw at our root, keeps it from running tools, and routes its
// warnings (which it would print to stderr) into our logger at debug level:
// our own warnings already say what is missing, once, in plain words.
// hidden maps host directories ghw should find empty.
func (r *reader) ghwArgs(hidden ...string) []any {
	// Should a ghw reader fall back to scanning /var/log/syslog* (its memory
	// reader does), it finds nothing: slow, and not our business.
	overrides := ghw.PathOverrides{"/var": "/.diskprep-hidden/var"}
	for _, h := range hidden {
		overrides[h] = "/.diskprep-hidden" + h
	}
	return []any{
		ghw.WithChroot(r.root),
		ghw.WithDisableTools(),
		ghw.WithLogger(slog.New(demoteHandler{r.log.Handler()})),
		ghw.WithPathOverrides(overrides),
	}
}

// demoteHandler turns every record into a debug record.
type demoteHandler struct{ h slog.Handler }

func (d demoteHandler) Enabled(ctx context.Context, _ slog.Level) bool {
	return d.h.Enabled(ctx, slog.LevelDebug)
}

func (d demoteHandler) Handle(ctx context.Context, rec slog.Record) error {
	rec.Level = slog.LevelDebug
	return d.h.Handle(ctx, rec.Clone())
}

func (d demoteHandler) WithAttrs(a []slog.Attr) slog.Handler {
	return demoteHandler{d.h.WithAttrs(a)}
}

func (d demoteHandler) WithGroup(g string) slog.Handler {
	return demoteHandler{d.h.WithGroup(g)}
}

func (r *reader) readIdentity(h *Host) {
	h.Hostname = r.readHostname()
	h.OS = r.readOS()
	if k, ok := r.readString("/proc/sys/kernel/osrelease"); ok && k != "" {
		h.Kernel = k
	} else if !ok {
		r.warn("kernel release unknown: %s not readable", r.rel("/proc/sys/kernel/osrelease"))
	}
	ci := r.readCPUInfo()
	h.CPU = r.readCPU(ci)
	h.Memory = r.readMemory()
	dmi := r.readDMI(h)
	h.Virt.Hypervisor, h.Virt.Evidence = r.detectHypervisor(dmi, ci)
	h.Virt.Container = r.detectContainer()
}

func (r *reader) readHostname() string {
	for _, p := range []string{"/proc/sys/kernel/hostname", "/etc/hostname"} {
		if s, ok := r.readString(p); ok && s != "" {
			// etc/hostname may carry comments on some distributions.
			for _, line := range strings.Split(s, "\n") {
				line = strings.TrimSpace(line)
				if line != "" && !strings.HasPrefix(line, "#") {
					return line
				}
			}
		}
	}
	r.warn("hostname unknown: neither %s nor %s readable", r.rel("/proc/sys/kernel/hostname"), r.rel("/etc/hostname"))
	return ""
}

func (r *reader) readOS() OS {
	var o OS
	found := false
	for _, p := range []string{"/etc/os-release", "/usr/lib/os-release"} {
		b, err := r.readFile(p)
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				r.warn("read %s: %v", r.rel(p), unwrapPath(err))
			}
			continue
		}
		kv, bad := parseOSRelease(b)
		if bad > 0 {
			r.warn("%s: %d malformed line(s) ignored", r.rel(p), bad)
		}
		o.ID, o.Name, o.Version, o.PrettyName = kv["ID"], kv["NAME"], kv["VERSION_ID"], kv["PRETTY_NAME"]
		found = true
		break
	}
	if !found {
		r.warn("os unknown: neither %s nor %s readable", r.rel("/etc/os-release"), r.rel("/usr/lib/os-release"))
	}
	if s, ok := r.readString("/etc/redhat-release"); ok {
		o.RedHatRelease = firstLine(s)
	}
	return o
}

// parseOSRelease reads the shell-like KEY=value format of os-release(5).
func parseOSRelease(b []byte) (map[string]string, int) {
	kv := map[string]string{}
	bad := 0
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || k == "" || strings.ContainsAny(k, " \t\"'") {
			bad++
			continue
		}
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') {
			if v[len(v)-1] != v[0] {
				bad++
				continue
			}
			q := v[0]
			v = v[1 : len(v)-1]
			if q == '"' {
				v = unescapeShell(v)
			}
		}
		kv[k] = v
	}
	return kv, bad
}

func unescapeShell(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return strings.TrimSpace(line)
}

// cpuInfo is what we take from /proc/cpuinfo ourselves, for the facts ghw
// does not give (the hypervisor flag) and for hosts whose sysfs lacks the
// CPU topology ghw needs.
type cpuInfo struct {
	readable   bool
	model      string
	vendor     string
	threads    int
	sockets    int
	cores      int  // 0 when cpuinfo has no core ids
	hasFlags   bool // x86: a "flags" line exists, so absence of "hypervisor" means something
	hypervisor bool
	// features: a flags (x86) or Features (arm64) line exists; aes: it
	// lists aes.
	features, aes bool
}

func (r *reader) readCPUInfo() cpuInfo {
	var ci cpuInfo
	b, err := r.readFile("/proc/cpuinfo")
	if err != nil {
		r.warn("cpu unknown: read %s: %v", r.rel("/proc/cpuinfo"), unwrapPath(err))
		return ci
	}
	ci.readable = true
	type coreKey struct{ pkg, core string }
	sockets := map[string]bool{}
	cores := map[coreKey]bool{}
	var pkg string
	coresPerPkg := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "processor":
			if _, err := strconv.Atoi(v); err == nil {
				ci.threads++
			}
			pkg = "0"
		case "model name", "Processor", "cpu model":
			if ci.model == "" {
				ci.model = v
			}
		case "vendor_id":
			if ci.vendor == "" {
				ci.vendor = v
			}
		case "physical id":
			pkg = v
			sockets[v] = true
		case "core id":
			cores[coreKey{pkg, v}] = true
		case "cpu cores":
			if n, err := strconv.Atoi(v); err == nil {
				coresPerPkg[pkg] = n
			}
		case "flags", "Features":
			ci.hasFlags = ci.hasFlags || k == "flags"
			ci.features = true
			for _, f := range strings.Fields(v) {
				switch f {
				case "hypervisor":
					ci.hypervisor = ci.hypervisor || k == "flags"
				case "aes":
					ci.aes = true
				}
			}
		}
	}
	ci.sockets = len(sockets)
	if len(cores) > 0 {
		ci.cores = len(cores)
	} else if len(coresPerPkg) > 0 {
		for _, n := range coresPerPkg {
			ci.cores += n
		}
	}
	if ci.threads == 0 {
		r.warn("%s: no processor entries", r.rel("/proc/cpuinfo"))
	}
	return ci
}

func (r *reader) readCPU(ci cpuInfo) CPU {
	var c CPU
	if !ci.readable {
		return c
	}
	info, err := ghw.CPU(r.ghwArgs()...)
	if err == nil && len(info.Processors) > 0 && info.TotalHardwareThreads > 0 {
		c.Sockets = len(info.Processors)
		c.Cores = int(info.TotalCores)
		c.Threads = int(info.TotalHardwareThreads)
		c.Model = info.Processors[0].Model
		c.Vendor = info.Processors[0].Vendor
	} else {
		// No sysfs topology (containers, trimmed trees): count from cpuinfo.
		c.Threads = ci.threads
		c.Sockets = ci.sockets
		c.Cores = ci.cores
		if c.Threads > 0 && c.Sockets == 0 {
			// Architectures without "physical id" lines; a socket count
			// would be a guess, and so would cores.
			c.Cores = 0
		}
	}
	if c.Model == "" {
		c.Model = ci.model
	}
	if c.Vendor == "" {
		c.Vendor = ci.vendor
	}
	if ci.features {
		aes := ci.aes
		c.AES = &aes
	}
	return c
}

// readMemory takes MemTotal from proc/meminfo itself: ghw's memory reader
// also walks every sys/devices/system/memory block for the physical size,
// which costs more than the rest of Read put together on a large host.
func (r *reader) readMemory() Memory {
	b, err := r.readFile("/proc/meminfo")
	if err != nil {
		r.warn("memory unknown: read %s: %v", r.rel("/proc/meminfo"), unwrapPath(err))
		return Memory{}
	}
	n, err := ParseMemTotal(string(b))
	switch {
	case errors.Is(err, ErrNoMemTotal):
		r.warn("memory unknown: %s has no MemTotal", r.rel("/proc/meminfo"))
	case err != nil:
		r.warn("memory unknown: %s: %v", r.rel("/proc/meminfo"), err)
	}
	return Memory{TotalBytes: n}
}

// dmiFacts are the DMI strings the hypervisor verdict looks at.
type dmiFacts struct {
	available                                   bool
	sysVendor, product, boardVendor, biosVendor string
	productVersion                              string
}

func (r *reader) readDMI(h *Host) dmiFacts {
	var d dmiFacts
	fi, err := os.Stat(r.path("/sys/class/dmi/id"))
	if err != nil || !fi.IsDir() {
		r.warn("board, system and BIOS unknown: %s not present (no DMI on this platform or in this tree)", r.rel("/sys/class/dmi/id"))
		return d
	}
	d.available = true
	args := r.ghwArgs()
	if bb, err := ghw.Baseboard(args...); err == nil {
		h.Board = Board{Vendor: known(bb.Vendor), Model: known(bb.Product), Version: known(bb.Version)}
	}
	if p, err := ghw.Product(args...); err == nil {
		h.System = SystemProduct{Vendor: known(p.Vendor), Product: known(p.Name), Version: known(p.Version)}
	}
	if b, err := ghw.BIOS(args...); err == nil {
		h.BIOS = BIOS{Vendor: known(b.Vendor), Version: known(b.Version), Date: known(b.Date)}
	}
	d.sysVendor, d.product, d.productVersion = h.System.Vendor, h.System.Product, h.System.Version
	d.boardVendor, d.biosVendor = h.Board.Vendor, h.BIOS.Vendor
	if d.sysVendor == "" && d.product == "" && d.boardVendor == "" && d.biosVendor == "" {
		r.warn("board, system and BIOS unknown: %s holds no readable vendor or product", r.rel("/sys/class/dmi/id"))
	}
	return d
}

// known maps ghw's "unknown" placeholder to our empty string.
func known(s string) string {
	s = strings.TrimSpace(s)
	if s == "unknown" {
		return ""
	}
	return s
}

// detectHypervisor decides from the strongest evidence first: DMI strings
// name the product outright; /sys/hypervisor names Xen; the cpuinfo flag only
// says "some hypervisor", and kvm-clock says which.
func (r *reader) detectHypervisor(d dmiFacts, ci cpuInfo) (string, string) {
	kvmClock := r.kvmClock()
	has := func(s, sub string) bool { return strings.Contains(strings.ToLower(s), strings.ToLower(sub)) }
	qemuOrKVM := func(ev string) (string, string) {
		if kvmClock {
			return "kvm", ev + "; kvm-clock clocksource"
		}
		return "qemu", ev + "; no kvm-clock clocksource (TCG emulation)"
	}
	switch {
	case has(d.sysVendor, "VMware") || has(d.product, "VMware"):
		return "vmware", "dmi sys_vendor=" + d.sysVendor + ", product_name=" + d.product
	case has(d.sysVendor, "innotek") || has(d.product, "VirtualBox"):
		return "virtualbox", "dmi sys_vendor=" + d.sysVendor + ", product_name=" + d.product
	case has(d.sysVendor, "Microsoft Corporation") && has(d.product, "Virtual Machine"):
		return "hyperv", "dmi sys_vendor=" + d.sysVendor + ", product_name=" + d.product
	case has(d.sysVendor, "Parallels") || has(d.product, "Parallels"):
		return "parallels", "dmi sys_vendor=" + d.sysVendor + ", product_name=" + d.product
	case has(d.biosVendor, "BHYVE") || has(d.product, "BHYVE"):
		return "bhyve", "dmi bios_vendor=" + d.biosVendor + ", product_name=" + d.product
	case has(d.sysVendor, "Amazon EC2"):
		// Nitro instances are KVM underneath; older Xen ones say "Xen".
		return "kvm", "dmi sys_vendor=" + d.sysVendor + " (AWS Nitro is KVM based)"
	case has(d.sysVendor, "Google") && has(d.product, "Google Compute Engine"):
		return "kvm", "dmi sys_vendor=" + d.sysVendor + ", product_name=" + d.product + " (GCE is KVM based)"
	case has(d.sysVendor, "Xen") || has(d.biosVendor, "Xen"):
		return "xen", "dmi sys_vendor=" + d.sysVendor + ", bios_vendor=" + d.biosVendor
	case has(d.product, "KVM") || has(d.sysVendor, "KVM"):
		return "kvm", "dmi product_name=" + d.product
	case has(d.sysVendor, "QEMU") || has(d.boardVendor, "QEMU"):
		return qemuOrKVM("dmi sys_vendor=" + d.sysVendor)
	}
	if t, ok := r.readString("/sys/hypervisor/type"); ok && t != "" {
		if t == "xen" {
			return "xen", "sys/hypervisor/type=xen"
		}
		return "other", "sys/hypervisor/type=" + t
	}
	if ci.hypervisor {
		if kvmClock {
			return "kvm", "cpuinfo hypervisor flag; kvm-clock clocksource"
		}
		return "other", "cpuinfo hypervisor flag"
	}
	if ci.hasFlags {
		return "none", "no hypervisor flag in cpuinfo"
	}
	if d.available {
		return "none", "no hypervisor vendor in dmi"
	}
	return "", ""
}

func (r *reader) kvmClock() bool {
	s, _ := r.readString("/sys/devices/system/clocksource/clocksource0/available_clocksource")
	for _, f := range strings.Fields(s) {
		if f == "kvm-clock" {
			return true
		}
	}
	return false
}

// detectContainer reads the markers container runtimes leave, most explicit
// first. Unreadable files (proc/1/environ is root-only) are simply skipped.
func (r *reader) detectContainer() string {
	if b, err := r.readFile("/proc/1/environ"); err == nil {
		for _, kv := range bytes.Split(b, []byte{0}) {
			if v, ok := bytes.CutPrefix(kv, []byte("container=")); ok && len(v) > 0 {
				return containerName(string(v))
			}
		}
	}
	if s, ok := r.readString("/run/systemd/container"); ok && s != "" {
		return containerName(s)
	}
	if r.exists("/run/.containerenv") {
		return "podman"
	}
	if r.exists("/.dockerenv") {
		return "docker"
	}
	looked := false
	if s, ok := r.readString("/proc/1/cgroup"); ok {
		looked = true
		switch {
		case strings.Contains(s, "/docker/") || strings.Contains(s, "/docker-"):
			return "docker"
		case strings.Contains(s, "/libpod-"):
			return "podman"
		case strings.Contains(s, "/lxc/") || strings.Contains(s, "/lxc.payload"):
			return "lxc"
		case strings.Contains(s, "/kubepods"):
			return "other"
		}
	}
	if s, ok := r.readString("/proc/self/mountinfo"); ok {
		looked = true
		for _, line := range strings.Split(s, "\n") {
			f := strings.Fields(line)
			if len(f) > 4 && f[4] == "/" && strings.Contains(line, " - overlay ") {
				switch {
				case strings.Contains(line, "/docker/"):
					return "docker"
				case strings.Contains(line, "/containers/storage/"):
					return "podman"
				}
			}
		}
	}
	if !looked {
		return "" // nothing to judge by
	}
	return "none"
}

func containerName(v string) string {
	switch v {
	case "docker", "podman", "lxc", "systemd-nspawn":
		return v
	case "lxc-libvirt":
		return "lxc"
	case "oci":
		return "other"
	}
	return "other"
}
