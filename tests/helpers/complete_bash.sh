# What bash would offer on TAB: source the completion script ($1), lay out the line ($2) the way bash
# does for a completion function, call it, print COMPREPLY one per line.
source "$1"
line="$2"
read -ra COMP_WORDS <<< "$line"
[[ "$line" == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); COMP_LINE="$line"; COMP_POINT=${#line}
_shtab_zerotui
printf '%s\n' "${COMPREPLY[@]}"
