/*
 * The native peer of bench/jpeg.bench.ts: libjpeg-turbo (Debian's libjpeg62-turbo, SIMD) called
 * in-process. Reads every file named on stdin (one path a line) into memory, then decodes
 * them all ROUNDS times to RGB (or grey) with the library's defaults (islow IDCT, fancy
 * upsampling, as djpeg), one thread. Prints one JSON line: the time of each round in seconds
 * and the megapixels of one round.
 *
 *   cc -O2 -o build/turbo_loop turbo_loop.c -ljpeg
 *   ls data/crops/*.jpg | build/turbo_loop 11
 *   ls data/crops/*.jpg | build/turbo_loop 11 grey    # one channel out (JCS_GRAYSCALE)
 *
 * A line "PATH X Y W H DENOM" decodes only that box of the file's pixels at scale 1/DENOM, with
 * libjpeg-turbo's partial decompression: scale_num/scale_denom, jpeg_crop_scanline (which widens
 * the columns to whole iMCUs), jpeg_skip_scanlines above the box, and jpeg_abort_decompress
 * after its last row (nothing below is read), as bench/jpeg_region.bench.ts's region decode does.
 * The megapixels are then the rows and columns the library hands over.
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <jpeglib.h>

struct err { struct jpeg_error_mgr mgr; jmp_buf jump; };
static void on_error(j_common_ptr c) { longjmp(((struct err *)c->err)->jump, 1); }

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 11;
  int grey = argc > 2 && strcmp(argv[2], "grey") == 0;
  char path[4096];
  unsigned char **bufs = NULL;
  unsigned long *lens = NULL;
  int (*boxes)[5] = NULL; /* x, y, w, h, denom; denom 0: the whole image */
  int n = 0;
  while (fgets(path, sizeof path, stdin)) {
    path[strcspn(path, "\n")] = 0;
    if (!*path) continue;
    boxes = realloc(boxes, (n + 1) * sizeof *boxes);
    boxes[n][4] = 0;
    char *sp = strchr(path, ' ');
    if (sp) {
      *sp = 0;
      if (sscanf(sp + 1, "%d %d %d %d %d", &boxes[n][0], &boxes[n][1], &boxes[n][2], &boxes[n][3], &boxes[n][4]) != 5) { fprintf(stderr, "bad box line for %s\n", path); return 1; }
    }
    FILE *f = fopen(path, "rb");
    if (!f) { fprintf(stderr, "cannot open %s\n", path); return 1; }
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    bufs = realloc(bufs, (n + 1) * sizeof *bufs);
    lens = realloc(lens, (n + 1) * sizeof *lens);
    bufs[n] = malloc(len);
    if (fread(bufs[n], 1, len, f) != (size_t)len) return 1;
    lens[n++] = len;
    fclose(f);
  }
  struct jpeg_decompress_struct d;
  struct err e;
  d.err = jpeg_std_error(&e.mgr);
  e.mgr.error_exit = on_error;
  jpeg_create_decompress(&d);
  unsigned char *out = NULL;
  size_t outCap = 0;
  double mpx = 0;
  printf("{\"seconds\":[");
  for (int r = 0; r < rounds; r++) {
    double t0 = now();
    double px = 0;
    for (int i = 0; i < n; i++) {
      if (setjmp(e.jump)) { fprintf(stderr, "decode failed on file %d\n", i); return 1; }
      jpeg_mem_src(&d, bufs[i], lens[i]);
      jpeg_read_header(&d, TRUE);
      if (grey) d.out_color_space = JCS_GRAYSCALE;
      if (boxes[i][4]) {
        int *b = boxes[i], den = b[4];
        d.scale_num = 1;
        d.scale_denom = den;
        jpeg_start_decompress(&d);
        JDIMENSION x0 = b[0] / den, x1 = (b[0] + b[2] + den - 1) / den, y0 = b[1] / den, y1 = (b[1] + b[3] + den - 1) / den;
        if (x1 > d.output_width) x1 = d.output_width;
        if (y1 > d.output_height) y1 = d.output_height;
        JDIMENSION xoff = x0, cw = x1 - x0;
        jpeg_crop_scanline(&d, &xoff, &cw);
        size_t row = (size_t)cw * d.output_components;
        if (row * 16 > outCap) { out = realloc(out, row * 16); outCap = row * 16; }
        if (y0) jpeg_skip_scanlines(&d, y0);
        while (d.output_scanline < y1) {
          JSAMPROW rows[16];
          JDIMENSION want = y1 - d.output_scanline < 16 ? y1 - d.output_scanline : 16;
          for (JDIMENSION k = 0; k < want; k++) rows[k] = out + row * k;
          jpeg_read_scanlines(&d, rows, want);
        }
        jpeg_abort_decompress(&d);
        px += (double)cw * (y1 - y0);
        continue;
      }
      jpeg_start_decompress(&d);
      size_t row = (size_t)d.output_width * d.output_components;
      size_t need = row * d.output_height;
      if (need > outCap) { out = realloc(out, need); outCap = need; }
      while (d.output_scanline < d.output_height) {
        JSAMPROW rows[16];
        int k;
        for (k = 0; k < 16; k++) rows[k] = out + row * (d.output_scanline + k < d.output_height ? d.output_scanline + k : d.output_height - 1);
        jpeg_read_scanlines(&d, rows, 16);
      }
      jpeg_finish_decompress(&d);
      px += (double)d.output_width * d.output_height;
    }
    printf("%s%.6f", r ? "," : "", now() - t0);
    mpx = px / 1e6;
  }
  printf("],\"megapixels\":%.6f}\n", mpx);
  jpeg_destroy_decompress(&d);
  return 0;
}
