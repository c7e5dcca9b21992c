#include "image_codecs.h"

#include <png.h>
#include <jpeglib.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void set_error(char *error, size_t size, const char *message) {
    if (error && size > 0) snprintf(error, size, "%s", message);
}

void mc_image_free(mc_image *image) {
    if (!image) return;
    free(image->rgb);
    image->rgb = NULL;
}

int mc_png_decode(const uint8_t *data, size_t size, uint64_t max_pixels, mc_image *out, char *error, size_t error_size) {
    png_image image;
    memset(&image, 0, sizeof image);
    memset(out, 0, sizeof *out);
    image.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&image, data, size)) {
        set_error(error, error_size, image.message[0] ? image.message : "not a readable PNG");
        png_image_free(&image);
        return 1;
    }
    if (image.width == 0 || image.height == 0 || (uint64_t)image.width * image.height > max_pixels) {
        char message[160];
        snprintf(message, sizeof message, "%ux%u pixels is beyond the limit of %llu pixels", image.width, image.height,
                 (unsigned long long)max_pixels);
        set_error(error, error_size, message);
        png_image_free(&image);
        return 2;
    }
    image.format = PNG_FORMAT_RGB;
    size_t bytes = (size_t)image.width * image.height * 3;
    /* Zeroed: alpha is composited directly onto the buffer, i.e. onto black. */
    uint8_t *rgb = calloc(bytes, 1);
    if (!rgb) {
        set_error(error, error_size, "out of memory");
        png_image_free(&image);
        return 3;
    }
    if (!png_image_finish_read(&image, NULL, rgb, 0, NULL)) {
        set_error(error, error_size, image.message[0] ? image.message : "corrupt PNG data");
        free(rgb);
        png_image_free(&image);
        return 1;
    }
    out->width = image.width;
    out->height = image.height;
    out->rgb = rgb;
    return 0;
}

struct mc_jpeg_error {
    struct jpeg_error_mgr manager;
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
};

static void mc_jpeg_fail(j_common_ptr info) {
    struct mc_jpeg_error *error = (struct mc_jpeg_error *)info->err;
    (*info->err->format_message)(info, error->message);
    longjmp(error->jump, 1);
}

/* Warnings (corrupt data the decoder can skip) are ignored; the image still decodes. */
static void mc_jpeg_warn(j_common_ptr info, int level) { (void)info; (void)level; }

int mc_jpeg_decode(const uint8_t *data, size_t size, uint64_t max_pixels, mc_image *out, char *error, size_t error_size) {
    struct jpeg_decompress_struct info;
    struct mc_jpeg_error failure;
    uint8_t *volatile rgb = NULL;
    memset(out, 0, sizeof *out);
    info.err = jpeg_std_error(&failure.manager);
    failure.manager.error_exit = mc_jpeg_fail;
    failure.manager.emit_message = mc_jpeg_warn;
    failure.message[0] = 0;
    if (setjmp(failure.jump)) {
        set_error(error, error_size, failure.message[0] ? failure.message : "corrupt JPEG data");
        jpeg_destroy_decompress(&info);
        free(rgb);
        return 1;
    }
    jpeg_create_decompress(&info);
    jpeg_mem_src(&info, data, (unsigned long)size);
    jpeg_read_header(&info, TRUE);
    if (info.image_width == 0 || info.image_height == 0 || (uint64_t)info.image_width * info.image_height > max_pixels) {
        char message[160];
        snprintf(message, sizeof message, "%ux%u pixels is beyond the limit of %llu pixels", info.image_width, info.image_height,
                 (unsigned long long)max_pixels);
        set_error(error, error_size, message);
        jpeg_destroy_decompress(&info);
        return 2;
    }
    if (info.jpeg_color_space == JCS_CMYK || info.jpeg_color_space == JCS_YCCK) {
        set_error(error, error_size, "CMYK JPEG images are not supported; save it as RGB");
        jpeg_destroy_decompress(&info);
        return 4;
    }
    info.out_color_space = JCS_RGB;
    jpeg_start_decompress(&info);
    size_t stride = (size_t)info.output_width * 3;
    rgb = malloc(stride * info.output_height);
    if (!rgb) {
        set_error(error, error_size, "out of memory");
        jpeg_destroy_decompress(&info);
        return 3;
    }
    while (info.output_scanline < info.output_height) {
        JSAMPROW row = rgb + stride * info.output_scanline;
        jpeg_read_scanlines(&info, &row, 1);
    }
    jpeg_finish_decompress(&info);
    out->width = info.output_width;
    out->height = info.output_height;
    out->rgb = rgb;
    jpeg_destroy_decompress(&info);
    return 0;
}

int mc_png_encode_rgb(const uint8_t *rgb, uint32_t width, uint32_t height, uint8_t **png, size_t *png_size) {
    png_image image;
    memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    image.width = width;
    image.height = height;
    image.format = PNG_FORMAT_RGB;
    size_t size = 0;
    *png = NULL;
    if (!png_image_write_to_memory(&image, NULL, &size, 0, rgb, 0, NULL)) return 1;
    uint8_t *buffer = malloc(size);
    if (!buffer) return 3;
    if (!png_image_write_to_memory(&image, buffer, &size, 0, rgb, 0, NULL)) {
        free(buffer);
        return 1;
    }
    *png = buffer;
    *png_size = size;
    return 0;
}
