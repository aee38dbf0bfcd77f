# What zsh would offer on TAB: an interactive zsh in a pseudo-terminal (zpty) with the folder $1 (holding
# _zerotui) on fpath, the line $2 typed and TAB pressed; compadd is wrapped to print each candidate.
# usage: zsh -f complete_zsh.zsh FOLDER "words to complete"
zmodload zsh/zpty
zpty -b z zsh -f -i
zpty -w z "PROMPT=; fpath=(${(q)1} \$fpath); autoload -Uz compinit; compinit -u -D"
zpty -w z "zstyle ':completion:*' list-grouped false; zstyle ':completion:*' format ''"
# print every candidate compadd is given, one per line, between markers
zpty -w z 'compadd() { local -a a; builtin compadd -O a "$@"; print -r -l -- "<C>"${^a}; builtin compadd "$@" }'
zpty -w z "print -- '<READY>'"
zpty -r z line '*<READY>*'
zpty -n -w z "$2"$'\t'
out=""
while zpty -r -t z line; do out+="$line"; done
sleep 1  # the menu may be drawn after the first quiet read
while zpty -r -t z line; do out+="$line"; done
print -r -- "$out" | tr '\r' '\n' | grep -o '<C>[^<]*' | sed 's/^<C>//' | sort -u
zpty -d z
