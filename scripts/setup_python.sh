# The interpreter checks of scripts/setup.sh, apart so tests/test_setup_python.py can run
# them alone: `source scripts/setup_python.sh`, then the functions below. Each prints
# its verdict; a failure's message says what happened, then Fix:.

# python_ok PY: PY starts and is Python >= 3.11. A command that exists but does not run
# (a pyenv shim whose version is not installed, a broken install) is told apart from an
# old Python by what it printed: an old one prints its version, a broken one its error.
python_ok() {
  local py=$1 out rc=0
  command -v "$py" >/dev/null || {
    echo "no '$py' on PATH. Fix: install Python >= 3.11, or name it: PYTHON=/path/to/python3"
    return 1
  }
  out=$("$py" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3]); sys.exit(sys.version_info < (3, 11))' 2>&1) || rc=$?
  if [ "$rc" = 0 ]; then return 0; fi
  if [ "$rc" = 1 ] && [[ "$out" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
    echo "'$py' is Python $out, too old: vyre_native needs Python >= 3.11 (its wgpu dependency does). Fix: PYTHON=python3.11 (or newer)"
  else
    echo "'$py' does not start (exit status $rc; it said: $(printf '%s' "$out" | tr -s ' \n' ' ' | cut -c1-400)). Fix: make it start (pyenv: select an installed version with pyenv shell <version>, or pyenv install it), or name one that runs: PYTHON=/path/to/python3"
  fi
  return 1
}

# python_id PY: what tells two interpreters apart: version and base prefix (a venv's
# python reports the interpreter it was made from).
python_id() { "$1" -c 'import sys; print("Python %d.%d.%d at %s" % (*sys.version_info[:3], sys.base_prefix))'; }

# venv_matches VENV PY: the venv VENV was made from the interpreter PY (same version and
# base prefix); prints both when they differ.
venv_matches() {
  local have want
  have=$(python_id "$1/bin/python" 2>/dev/null) || have="an interpreter that does not start"
  want=$(python_id "$2")
  [ "$have" = "$want" ] && return 0
  echo "$1 has $have, PYTHON=$2 is $want"
  return 1
}
