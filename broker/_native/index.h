/* The index functions of the _store module (index.c). */
#ifndef RMQ_EMU_STORE_INDEX_H
#define RMQ_EMU_STORE_INDEX_H

#include <Python.h>

extern PyMethodDef store_index_methods[];
int store_index_init(void);

#endif
