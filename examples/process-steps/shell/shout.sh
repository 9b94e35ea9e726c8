#!/bin/sh
# A process step in POSIX sh (docs/process-steps.md): Shout upper-cases its
# one string argument. No SDK: the hello, then one reply line per request.
# It reads only what it needs from the request, so it takes a plain string
# (no quotes or backslashes in it) and refuses anything else for good.
printf '%s\n' '{"ductwork":"steps","protocol":1,"steps":["Shout"]}'
while IFS= read -r request; do
  text=$(printf '%s\n' "$request" | sed -n 's/.*"args":\["\([^"\\]*\)"\].*/\1/p')
  if [ -z "$text" ] && ! printf '%s\n' "$request" | grep -q '"args":\[""\]'; then
    printf '%s\n' '{"type":"error","class":"ArgumentError","message":"Shout takes one plain string","retryable":false}'
    continue
  fi
  printf '{"type":"log","level":"info","message":"shouting %d characters"}\n' "${#text}"
  printf '{"type":"output","value":"%s"}\n' "$(printf '%s' "$text" | tr '[:lower:]' '[:upper:]')"
done
