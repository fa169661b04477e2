# Test hosts in network namespaces, for the multi-host tests. Sourced.
#
# nn_setup P N makes N hosts, "P-h1".."P-hN", each a network namespace with
# one veth link into a bridge that lives in its own namespace "P-br", so
# nothing touches the machine's own network. Host K has the address
# 10.<net>.0.K/24 (net from the PID, 100..249). nn_link_down/up cut and
# restore one host's link at the bridge: its processes keep running, its
# TCP connections stall (no reset), as when a cable or a switch port dies.
# nn_teardown kills what runs in the namespaces and deletes them; it is
# safe to call twice and from an EXIT trap.

NN_NET=$((100 + $$ % 150))

nn_available() {
	local probe="blqnn-probe-$$"
	if ! command -v ip >/dev/null 2>&1 || ! command -v nsenter >/dev/null 2>&1; then
		echo "no ip (iproute2) or nsenter (util-linux) command" >&2
		return 1
	fi
	if ! ip netns add "$probe" 2>/dev/null; then
		echo "cannot create a network namespace (not root, or no CAP_SYS_ADMIN)" >&2
		return 1
	fi
	ip netns del "$probe"
}

nn_addr() { echo "10.$NN_NET.0.$2"; }

# nsenter execs the command in place (ip netns exec forks and waits, so a
# signal to it would not reach the command).
nn_exec() {
	local p=$1 k=$2
	shift 2
	nsenter --net="/run/netns/$p-h$k" -- "$@"
}

# nn_spawn P K cmd...: starts cmd on host K in the background as a direct
# child of this shell, so the caller's $! is cmd's pid (kill and wait work
# on it). `nn_exec ... &` would give the pid of a subshell instead.
nn_spawn() {
	local p=$1 k=$2
	shift 2
	nsenter --net="/run/netns/$p-h$k" -- "$@" &
}

nn_setup() {
	local p=$1 n=$2 k
	ip netns add "$p-br" || return 1
	ip -n "$p-br" link add br0 type bridge || return 1
	ip -n "$p-br" link set br0 up
	ip -n "$p-br" link set lo up
	for k in $(seq "$n"); do
		ip netns add "$p-h$k" || return 1
		ip -n "$p-h$k" link set lo up
		# The pair is made in the bridge's namespace; one end moves out.
		ip -n "$p-br" link add "p$k" type veth peer name "eth0" netns "$p-h$k" || return 1
		ip -n "$p-br" link set "p$k" master br0
		ip -n "$p-br" link set "p$k" up
		ip -n "$p-h$k" addr add "$(nn_addr "$p" "$k")/24" dev eth0
		ip -n "$p-h$k" link set eth0 up
	done
}

nn_link_down() { ip -n "$1-br" link set "p$2" down; }
nn_link_up() { ip -n "$1-br" link set "p$2" up; }

nn_teardown() {
	local p=$1 ns pid
	for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$p-"); do
		for pid in $(ip netns pids "$ns" 2>/dev/null); do
			kill -9 "$pid" 2>/dev/null
		done
		ip netns del "$ns" 2>/dev/null
	done
}

# nn_redis_start P K PORT DIR: a durable redis-server (AOF, fsync always)
# on host K; prints its pid once it answers.
nn_redis_start() {
	local p=$1 k=$2 port=$3 dir=$4 addr i
	addr=$(nn_addr "$p" "$k")
	nn_spawn "$p" "$k" redis-server --port "$port" --bind "$addr" 127.0.0.1 --dir "$dir" \
		--appendonly yes --appendfsync always --save '' --logfile "$dir/redis.log" \
		--protected-mode no >/dev/null 2>&1
	local pid=$!
	for i in $(seq 50); do
		nn_exec "$p" "$k" redis-cli -h "$addr" -p "$port" ping 2>/dev/null | grep -q PONG &&
			{ echo "$pid"; return 0; }
		sleep 0.1
	done
	echo "redis-server did not start on $addr:$port (see $dir/redis.log)" >&2
	return 1
}
