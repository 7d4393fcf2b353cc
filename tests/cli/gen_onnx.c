/* gen_onnx.c — writes the networks tests/cli/test_onnx.sh reads:
 * gen_onnx DIR -> DIR/resnet50.onnx and DIR/unet.onnx (tests/unit/onnx_writer.h:
 * torchvision's ResNet-50 and the reference's U-Net, graph only). */
#include "onnx_writer.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen_onnx DIR\n");
        return 2;
    }
    char p[4096];
    ow_buf b;
    ow_resnet50(&b);
    snprintf(p, sizeof p, "%s/resnet50.onnx", argv[1]);
    ow_write_file(p, &b);
    free(b.p);
    ow_unet(&b);
    snprintf(p, sizeof p, "%s/unet.onnx", argv[1]);
    ow_write_file(p, &b);
    free(b.p);
    return 0;
}
