package sandboxtest

// WritablePlaces is a shell script that prints, one per line and sorted,
// "<mount point> <fs type>" for every mount point in a sandbox where the
// user it runs as can create a file (or, for a file mount point, open it
// for writing). A provider's tests compare it with the places it means to
// be writable: its size-enforced workspace and tmpfs charged to memory,
// never a host directory. Kernel interfaces hold no files, and masked
// paths (/proc/keys, ...) are /dev/null bound over them: neither is
// storage, so both are left out.
const WritablePlaces = `awk '{for (i = 7; i <= NF; i++) if ($i == "-") { print $5, $(i+1); break }}' /proc/self/mountinfo |
sort -u | while read -r mp fs; do
  case "$fs" in proc|sysfs|cgroup|cgroup2) continue ;; esac
  if [ -c "$mp" ]; then continue; fi
  if [ -d "$mp" ]; then
    if (: > "$mp/.probe-$$") 2>/dev/null; then rm -f "$mp/.probe-$$"; echo "$mp $fs"; fi
  elif (: >> "$mp") 2>/dev/null; then echo "$mp $fs"; fi
done`
