# The Python package (python/): a fresh venv on Debian's /usr/bin/python3
# (--system-site-packages: Debian's torch), 'pip install ./python' offline
# (no index, no build isolation: Debian's setuptools), then its tests
# (python/tests/test_vramfit.py) against this build's vramfit.
. tests/cli/lib.sh
PY=/usr/bin/python3
case "$BUILD" in *asan*)
    # python3 is not instrumented: the package loads the plain build's libraries (make check runs it there)
    ok "python: the package's tests run on the plain build, not under the sanitizers"; exit 0 ;;
esac
[ -x "$PY" ] || { fail "python: /usr/bin/python3" "missing: run 'make deps'"; exit 0; }
[ -f "$BUILD/libvramfit-cli.so" ] || { fail "python: $BUILD/libvramfit-cli.so" "not built (make all)"; exit 0; }
VENV="$PWD/$BUILD/python-venv"
rm -rf "$VENV"
if "$PY" -m venv --system-site-packages "$VENV" >"$TMP/venv.log" 2>&1; then
    ok "python: venv on Debian's python3"
else
    fail "python: venv" "$(tail -n 3 "$TMP/venv.log") (Debian: python3-venv)"
    exit 0
fi
# a copy of python/ outside the tree: the build writes nothing into the repository
cp -r python "$TMP/pkg"
if VRAMFIT_BUILD="$PWD/$BUILD" PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    "$VENV/bin/pip" install --no-index --no-build-isolation "$TMP/pkg" >"$TMP/pip.log" 2>&1; then
    ok "python: pip install ./python offline"
else
    fail "python: pip install" "$(tail -n 5 "$TMP/pip.log")"
    exit 0
fi
(cd "$TMP" && "$VENV/bin/python" -c 'import vramfit, os; d = os.path.dirname(vramfit.__file__); assert "site-packages" in d, d; assert os.path.isfile(os.path.join(d, "_lib", "libvramfit-cli.so"))') &&
    ok "python: the installed package carries the libraries it was built with" ||
    fail "python: installed package" "vramfit not imported from the venv's site-packages with its _lib"
if (cd "$TMP" && VRAMFIT_CLI="$OLDPWD/$VF" "$VENV/bin/python" "$OLDPWD/python/tests/test_vramfit.py") >"$TMP/py.log" 2>&1; then
    ok "python: $(sed -n 's/^Ran \([0-9]*\) test.*/\1/p' "$TMP/py.log") package tests ($(grep 'host RSS' "$TMP/py.log" | sed 's/^ *//'))"
else
    fail "python: package tests" "$(grep -E 'FAIL|ERROR|Error|assert' "$TMP/py.log" | head -n 8 | tr '\n' ' ')"
fi
