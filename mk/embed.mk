# Embeds data/ (model configs, GPU catalog) into the library at build time,
# with the catalog's index generated from data/models/catalog.tsv.
EMBED_FILES := $(sort $(wildcard data/models/*.json) $(wildcard data/*.json))
# Each model's counts, made by the library itself (Makefile: the two stages).
COUNTS_C := $(BUILD)/gen/catalog_counts.c
GEN_SRCS += $(BUILD)/gen/embedded.c $(BUILD)/gen/catalog_index.c $(COUNTS_C)

$(BUILD)/tools/embed: tools/embed.c
	@mkdir -p $(dir $@)
	$(call QUIET,CC,$@)$(CC) -O1 -o $@ $<

$(BUILD)/tools/catalog_index: tools/catalog_index.c src/lib/read/pyfloats.c src/lib/read/pyfloats.h
	@mkdir -p $(dir $@)
	$(call QUIET,CC,$@)$(CC) $(CSTD) -O1 $(WARN) -Isrc/lib $(PKG_CFLAGS) -o $@ tools/catalog_index.c src/lib/read/pyfloats.c $(PKG_LIBS)

$(BUILD)/gen/embedded.c: $(BUILD)/tools/embed $(EMBED_FILES) mk/embed.mk
	@mkdir -p $(dir $@)
	$(call QUIET,EMBED,$@)$(BUILD)/tools/embed $@ data $(EMBED_FILES)

$(BUILD)/gen/catalog_index.c: $(BUILD)/tools/catalog_index data/models/catalog.tsv $(EMBED_FILES) mk/embed.mk
	@mkdir -p $(dir $@)
	$(call QUIET,INDEX,$@)$(BUILD)/tools/catalog_index $@ data/models

$(BUILD)/obj/$(BUILD)/gen/embedded.o: $(BUILD)/gen/embedded.c
	@mkdir -p $(dir $@)
	$(call QUIET,CC,$<)$(CC) $(CFLAGS_ALL) -DVF_BUILDING_LIBRARY -fvisibility=hidden -c $< -o $@

$(BUILD)/obj/$(BUILD)/gen/catalog_index.o: $(BUILD)/gen/catalog_index.c src/lib/read/catalog_index.h
	@mkdir -p $(dir $@)
	$(call QUIET,CC,$<)$(CC) $(CFLAGS_ALL) -DVF_BUILDING_LIBRARY -fvisibility=hidden -c $< -o $@

$(BUILD)/obj/$(COUNTS_C:.c=.o): $(COUNTS_C) src/lib/read/catalog_counts.h
	@mkdir -p $(dir $@)
	$(call QUIET,CC,$<)$(CC) $(CFLAGS_ALL) -DVF_BUILDING_LIBRARY -fvisibility=hidden -c $< -o $@
