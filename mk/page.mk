# The page of 'vramfit serve' (src/cli/serve/page/index.html), embedded in the CLI.
CLI_SRCS += $(BUILD)/gen/page.c

$(BUILD)/gen/page.c: $(BUILD)/tools/embed src/cli/serve/page/index.html mk/page.mk
	@mkdir -p $(dir $@)
	$(call QUIET,EMBED,$@)$(BUILD)/tools/embed --symbol vf_serve_page $@ src/cli/serve/page/index.html

# The browser test's node package (tests/cli/test_page.sh), as tools/deps.sh installs it.
PAGE_NODE := tests/page/node_modules/.vramfit-installed
$(PAGE_NODE): tests/page/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
	  echo '  NPM    tests/page (npm ci)'; cd tests/page && npm ci --no-audit --no-fund --prefer-offline >/dev/null && touch node_modules/.vramfit-installed; \
	else echo "vramfit: the page's browser test needs npm, node and chromium: run 'make deps'" >&2; fi
CHECK_EXTRA += $(PAGE_NODE)

# make bench: 200 requests at once to 'vramfit serve' on loopback (bench/serve.sh).
$(BUILD)/bench/serve_load: bench/serve_load.c
	@mkdir -p $(dir $@)
	$(call QUIET,CC,$@)$(CC) $(CSTD) $(OPT) $(WARN) -o $@ $< -lpthread
bench: $(BUILD)/bench/serve_load
