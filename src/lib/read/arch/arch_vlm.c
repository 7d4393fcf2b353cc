/* arch_vlm.c — vision-language wrappers: the text model (a family of its
 * own, which the reader resolved into b->text_build, written under the
 * checkpoint's prefix) and the vision tower + projector (arch_vision.c). */
#include "read/arch/arch.h"

vf_status vf__arch_vlm(vf__ab *b)
{
    const char *wrapper = b->type ? b->type : b->m->hp.architecture;
    if (!b->text_build)
        return vf__err(b->err, VF_EUNSUPPORTED, b->path, "model_type '%.64s': no text model", wrapper);
    b->type = b->text_type;
    vf_status st = b->text_build(b);
    if (st != VF_OK && b->st == VF_OK)
        b->st = st;
    b->type = wrapper;
    b->pre = b->head = NULL;
    if (b->st == VF_OK)
        vf__vision_tower(b, wrapper);
    return b->st;
}
