# kube.bash: sourced by kube-up, kube-down, kube-load and kube-check. Where the single-node cluster
# lives, how to tell that a component kube-up started still runs, and how to stop it all.
#
# The cluster is the machine's one cluster: its state, logs and pid files are under
# /tmp/skillgate-kube, its ports are fixed loopback ports, and a lock file keeps two callers
# from starting or stopping it at the same time. The built components are cached by version
# under the user cache folder and kept when the cluster stops.

kube_version=v1.34.4
kube_cache=${XDG_CACHE_HOME:-$HOME/.cache}/skillgate/kube/$kube_version
kube_state=/tmp/skillgate-kube
kube_lock=/tmp/skillgate-kube.lock
kube_socket=$kube_state/containerd.sock
kube_kubeconfig=$kube_state/admin.kubeconfig
kube_me=${0##*/}

# The components in start order.
kube_components=(containerd etcd kube-apiserver kube-controller-manager kube-scheduler kubelet)

# The host settings the kubelet changes; kube-up saves them and kube_stop puts them back.
kube_sysctls=(vm/overcommit_memory kernel/panic kernel/panic_on_oops)

# Host folders the kubelet and the runtime use whatever they are configured with (the device
# plugin socket, CNI result cache, network namespaces, log links). Those that did not exist
# before kube-up are emptied of sockets and empty folders and removed on stop.
kube_host_folders=(/var/lib/kubelet /var/lib/cni /var/run/netns /var/log/containers)

# kube_lock_exclusive and kube_lock_shared take the cluster's lock on fd 9: starting and stopping
# are exclusive, importing an image only needs the cluster to stay as it is.
kube_lock_exclusive() {
	exec 9>>"$kube_lock"
	flock 9
}
kube_lock_shared() {
	exec 9>>"$kube_lock"
	flock -s 9
}

# kube_pid prints the pid of a component kube-up started, if that process still runs as that
# component: a pid file alone may name a pid the kernel has since given to another process.
kube_pid() {
	local f=$kube_state/run/$1.pid pid argv0
	[ -f "$f" ] || return 1
	pid=$(<"$f")
	argv0=$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | head -n 1) || return 1
	[ "${argv0##*/}" = "$1" ] || return 1
	echo "$pid"
}

kube_ctr() {
	ctr --address "$kube_socket" --namespace k8s.io "$@"
}

kube_kubectl() {
	"$kube_cache/bin/kubectl" --kubeconfig "$kube_kubeconfig" --cache-dir "$kube_state/kubectl-cache" "$@"
}

# kube_kill stops components by their pid files, all at once: SIGTERM, then SIGKILL after 10 s.
kube_kill() {
	local name pid pids=()
	for name; do
		if pid=$(kube_pid "$name"); then
			echo "$kube_me: stopping $name (pid $pid)" >&2
			kill -TERM "$pid" 2>/dev/null || true
			pids+=("$pid")
		fi
		rm -f "$kube_state/run/$name.pid"
	done
	local alive
	for _ in $(seq 100); do
		alive=()
		for pid in "${pids[@]}"; do
			! kube_running "$pid" || alive+=("$pid")
		done
		[ "${#alive[@]}" -gt 0 ] || return 0
		sleep 0.1
	done
	kill -KILL "${alive[@]}" 2>/dev/null || true
}

# kube_running says whether a process runs; a zombie (a component kube-up started and that
# exited while kube-up still runs) does not.
kube_running() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	stat=${stat##*) }
	[ "${stat%% *}" != Z ]
}

# kube_stop stops whatever kube-up started and removes the cluster's state but its component
# logs (kept for a look after a failure), restoring the host settings the kubelet changed. It is
# safe to call when nothing runs.
kube_stop() {
	[ -d "$kube_state" ] || return 0

	# Pods go first, through the kubelet, so that their sandboxes and network namespaces are
	# torn down as the runtime sets them up.
	if kube_pid kube-apiserver >/dev/null && kube_pid kubelet >/dev/null && kube_pid containerd >/dev/null; then
		echo "$kube_me: removing every Pod" >&2
		kube_kubectl delete pods --all --all-namespaces --force --grace-period=0 --wait=false >/dev/null 2>&1 || true
		for _ in $(seq 60); do
			[ -z "$(kube_ctr tasks ls -q 2>/dev/null)" ] && break
			sleep 0.5
		done
	fi
	# The kubelet first, so that nothing restarts a container; etcd after its clients.
	kube_kill kubelet
	kube_kill kube-scheduler kube-controller-manager kube-apiserver
	kube_kill etcd

	# Containers the kubelet did not stop in time are killed through the runtime itself. The
	# runtime would have removed their sandboxes' network namespaces and cached CNI results
	# when the kubelet stopped them: those are noted, to be removed below.
	local id ids=() netns=()
	if kube_pid containerd >/dev/null; then
		ids=($(kube_ctr containers ls -q 2>/dev/null || true))
		for id in "${ids[@]}"; do
			netns+=($(kube_ctr containers info "$id" 2>/dev/null | grep -o '"/var/run/netns/cni-[0-9a-f-]*"' | tr -d '"' || true))
		done
		for id in $(kube_ctr tasks ls -q 2>/dev/null); do
			kube_ctr tasks kill --signal SIGKILL "$id" >/dev/null 2>&1 || true
		done
		for id in $(kube_ctr tasks ls -q 2>/dev/null); do
			kube_ctr tasks delete --force "$id" >/dev/null 2>&1 || true
		done
	fi
	kube_kill containerd

	# A shim outlives its containerd; each one this containerd started has its pid file here.
	local f pid
	for f in "$kube_state"/containerd/state/io.containerd.runtime.v2.task/*/*/shim.pid; do
		[ -f "$f" ] || continue
		pid=$(<"$f")
		if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "-address $kube_socket "; then
			kill -KILL "$pid" 2>/dev/null || true
		fi
	done

	local n
	for n in "${netns[@]}"; do
		umount "$n" 2>/dev/null || umount -l "$n" 2>/dev/null || true
		rm -f "$n"
	done
	for id in "${ids[@]}"; do
		rm -f /var/lib/cni/results/*-"$id"-*
	done

	# Mounts left under the state folder (container root file systems, Pod volumes), deepest first.
	local m
	while read -r m; do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
	done < <(awk -v s="$kube_state/" 'index($5, s) == 1 { print $5 }' /proc/self/mountinfo | sort -r)

	kube_restore_host

	if awk -v s="$kube_state/" 'index($5, s) == 1 { found = 1 } END { exit !found }' /proc/self/mountinfo; then
		echo "$kube_me: mounts remain under $kube_state; its state is left in place" >&2
		return 1
	fi
	find "$kube_state" -mindepth 1 -maxdepth 1 ! -name log -exec rm -rf --one-file-system {} +
}

# kube_restore_host removes what the kubelet left in host folders and puts back the settings
# and folders saved before it started.
kube_restore_host() {
	# The kubelet links every container's log into /var/log/containers.
	local l
	for l in /var/log/containers/*; do
		[ -L "$l" ] || continue
		case $(readlink "$l") in
		"$kube_state"/*) rm -f "$l" ;;
		esac
	done
	# The kubelet's Pod cgroups, once empty.
	find /sys/fs/cgroup/*/kubepods -depth -type d -exec rmdir {} + 2>/dev/null || true

	local saved=$kube_state/host.saved key value
	[ -f "$saved" ] || return 0
	while read -r key value; do
		case $key in
		sysctl) echo "${value#* }" >"/proc/sys/${value%% *}" 2>/dev/null || true ;;
		folder) find "$value" -depth \( -type s -delete -o -type d -empty -delete \) 2>/dev/null || true ;;
		esac
	done < <(tac "$saved")
	rm -f "$saved"
}
