/* PNG and JPEG decoding for modelconv's image inputs, through libpng's simplified API and
 * libjpeg-turbo. libjpeg reports errors by longjmp, which Swift cannot catch, so decoding happens
 * here in C and every failure comes back as a return code and a message. */
#ifndef MODELCONV_IMAGE_CODECS_H
#define MODELCONV_IMAGE_CODECS_H

#include <stddef.h>
#include <stdint.h>

/* A decoded image: 8-bit RGB, rows top to bottom, no padding. */
typedef struct {
    uint32_t width;
    uint32_t height;
    uint8_t *rgb; /* width * height * 3 bytes, owned; free with mc_image_free */
} mc_image;

/* 0 on success. Images with more than max_pixels pixels are refused before any pixel memory is
 * allocated. A PNG's alpha is composited onto black (what a premultiplied pixel buffer holds). */
int mc_png_decode(const uint8_t *data, size_t size, uint64_t max_pixels, mc_image *out, char *error, size_t error_size);
int mc_jpeg_decode(const uint8_t *data, size_t size, uint64_t max_pixels, mc_image *out, char *error, size_t error_size);

/* Encodes 8-bit RGB rows as a PNG in memory; 0 on success, *png owned by the caller (free()). */
int mc_png_encode_rgb(const uint8_t *rgb, uint32_t width, uint32_t height, uint8_t **png, size_t *png_size);

void mc_image_free(mc_image *image);

#endif
