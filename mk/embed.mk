# Embeds data/ (model configs, GPU catalog) into the library at build time.
EMBED_FILES := $(sort $(wildcard data/models/*.json) $(wildcard data/*.json))
GEN_SRCS += $(BUILD)/gen/embedded.c

$(BUILD)/tools/embed: tools/embed.c
	@mkdir -p $(dir $@)
	$(call QUIET,CC,$@)$(CC) -O1 -o $@ $<

$(BUILD)/gen/embedded.c: $(BUILD)/tools/embed $(EMBED_FILES) mk/embed.mk
	@mkdir -p $(dir $@)
	$(call QUIET,EMBED,$@)$(BUILD)/tools/embed $@ data $(EMBED_FILES)

$(BUILD)/obj/$(BUILD)/gen/embedded.o: $(BUILD)/gen/embedded.c
	@mkdir -p $(dir $@)
	$(call QUIET,CC,$<)$(CC) $(CFLAGS_ALL) -DVF_BUILDING_LIBRARY -fvisibility=hidden -c $< -o $@
