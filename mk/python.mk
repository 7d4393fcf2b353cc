# The Python package (python/, docs/design.md "Library"): the command run
# in-process from a shared object on top of libvramfit.so (src/cli/embed.c),
# so that vramfit.estimate() returns the command's own --json object.
$(BUILD)/libvramfit.so.0: $(BUILD)/libvramfit.so
	@ln -sf libvramfit.so $@

# (CLI_OBJS is set after mk/*.mk are read: the command's binary stands for
# its objects among the prerequisites; the recipe expands the list late.)
$(BUILD)/libvramfit-cli.so: $(BUILD)/vramfit $(BUILD)/libvramfit.so $(BUILD)/libvramfit.so.0
	$(call QUIET,LD,$@)$(CC) -shared -Wl,--no-undefined $(LDFLAGS_ALL) -o $@ $(CLI_OBJS) -L$(BUILD) -l:libvramfit.so \
	  -Wl,-rpath,'$$ORIGIN' $(MHD_LIBS) $(LIBS)

all: $(BUILD)/libvramfit-cli.so
