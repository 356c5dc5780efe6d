#!/bin/sh
# pip's wheel folders and constraints files on this machine (pip's merged configuration), as uv's
# options: --find-links DIR ... --constraint FILE ... (uv does not read pip's configuration).
"${1:-python3}" -m pip config list 2>/dev/null |
	sed -n "s/^global\.\(find-links\|constraint\)='\(.*\)'$/\1 \2/p" |
	while read -r key values; do
		for value in $values; do printf -- '--%s %s ' "$key" "$value"; done
	done
