/*
 * Writes what BM25 needs from a Lucene index, for one text field, as flat little-endian arrays
 * that numpy memory-maps (harness/retrieve/lucene_scorer.py reads them):
 *
 *   terms.utf8, term_ends.i64   the field's terms in Lucene's (byte) order, concatenated; end offsets
 *   starts.i64                  term t's postings are docs[starts[t]:starts[t+1]]
 *   docs.i32, freqs.u16         Lucene docids (ascending within a term) and term frequencies;
 *                               a frequency over 65535 is stored as 65535, and exactly in
 *   big_freqs.i64               (posting number, frequency) pairs
 *   norms.u8                    each document's 1-byte length norm (0 when the field is absent)
 *   ids.utf8, id_ends.i64,      the id field's terms in byte order (Anserini's tie order),
 *   id_docs.i32                 and the document each belongs to
 *
 * (lucene_scorer.write_block_bounds then adds each block of postings' score bounds.)
 *
 * One pass in Java: calling Lucene per posting from Python costs ~2.5 us a posting. Built with
 *   javac --release 21 -cp <pyserini's anserini fat jar> -d build PostingsExport.java
 *   jar --create --file postings-export.jar -C build .
 */
package harness.lucene;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.apache.lucene.index.IndexReader;
import org.apache.lucene.index.MultiDocValues;
import org.apache.lucene.index.MultiTerms;
import org.apache.lucene.index.NumericDocValues;
import org.apache.lucene.index.PostingsEnum;
import org.apache.lucene.index.Terms;
import org.apache.lucene.index.TermsEnum;
import org.apache.lucene.search.DocIdSetIterator;
import org.apache.lucene.util.BytesRef;

public final class PostingsExport {
  private PostingsExport() {}

  /** Exports `field` and `idField` of `reader` into `folder`; returns "" or why it could not. */
  public static String export(IndexReader reader, String field, String idField, String folder)
      throws IOException {
    Path dir = Path.of(folder);
    Terms terms = MultiTerms.getTerms(reader, field);
    if (terms == null) {
      return "the index has no field " + field;
    }
    try (Out termBytes = new Out(dir.resolve("terms.utf8"));
        Out termEnds = new Out(dir.resolve("term_ends.i64"));
        Out starts = new Out(dir.resolve("starts.i64"));
        Out docs = new Out(dir.resolve("docs.i32"));
        Out freqs = new Out(dir.resolve("freqs.u16"));
        Out bigFreqs = new Out(dir.resolve("big_freqs.i64"))) {
      TermsEnum termsEnum = terms.iterator();
      PostingsEnum postings = null;
      long count = 0;
      long bytes = 0;
      starts.putLong(0);
      for (BytesRef term = termsEnum.next(); term != null; term = termsEnum.next()) {
        termBytes.put(term);
        bytes += term.length;
        termEnds.putLong(bytes);
        postings = termsEnum.postings(postings, PostingsEnum.FREQS);
        for (int doc = postings.nextDoc(); doc != DocIdSetIterator.NO_MORE_DOCS; doc = postings.nextDoc()) {
          int freq = postings.freq();
          docs.putInt(doc);
          if (freq > 0xFFFF) {
            bigFreqs.putLong(count);
            bigFreqs.putLong(freq);
          }
          freqs.putShort((short) Math.min(freq, 0xFFFF));
          count++;
        }
        starts.putLong(count);
      }
    }
    int maxDoc = reader.maxDoc();
    try (Out norms = new Out(dir.resolve("norms.u8"))) {
      byte[] values = new byte[maxDoc];
      NumericDocValues stored = MultiDocValues.getNormValues(reader, field);
      if (stored != null) {
        for (int doc = stored.nextDoc(); doc != DocIdSetIterator.NO_MORE_DOCS; doc = stored.nextDoc()) {
          values[doc] = (byte) stored.longValue();
        }
      }
      norms.put(new BytesRef(values));
    }
    Terms ids = MultiTerms.getTerms(reader, idField);
    if (ids == null) {
      return "the index has no field " + idField;
    }
    boolean[] seen = new boolean[maxDoc];
    try (Out idBytes = new Out(dir.resolve("ids.utf8"));
        Out idEnds = new Out(dir.resolve("id_ends.i64"));
        Out idDocs = new Out(dir.resolve("id_docs.i32"))) {
      TermsEnum termsEnum = ids.iterator();
      PostingsEnum postings = null;
      long bytes = 0;
      for (BytesRef term = termsEnum.next(); term != null; term = termsEnum.next()) {
        postings = termsEnum.postings(postings, PostingsEnum.NONE);
        int doc = postings.nextDoc();
        if (doc == DocIdSetIterator.NO_MORE_DOCS || seen[doc] || postings.nextDoc() != DocIdSetIterator.NO_MORE_DOCS) {
          return "not every document has one " + idField + " of its own";
        }
        seen[doc] = true;
        idBytes.put(term);
        bytes += term.length;
        idEnds.putLong(bytes);
        idDocs.putInt(doc);
      }
    }
    for (boolean found : seen) {
      if (!found) {
        return "not every document has one " + idField + " of its own";
      }
    }
    return "";
  }

  /** A little-endian file written through a 1 MiB buffer. */
  private static final class Out implements AutoCloseable {
    private final FileChannel channel;
    private final ByteBuffer buffer = ByteBuffer.allocate(1 << 20).order(ByteOrder.LITTLE_ENDIAN);

    Out(Path path) throws IOException {
      channel = FileChannel.open(path, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
    }

    private void room(int bytes) throws IOException {
      if (buffer.remaining() < bytes) {
        flush();
      }
    }

    void putLong(long value) throws IOException {
      room(8);
      buffer.putLong(value);
    }

    void putInt(int value) throws IOException {
      room(4);
      buffer.putInt(value);
    }

    void putShort(short value) throws IOException {
      room(2);
      buffer.putShort(value);
    }

    void put(BytesRef bytes) throws IOException {
      if (bytes.length > buffer.capacity()) {
        flush();
        ByteBuffer whole = ByteBuffer.wrap(bytes.bytes, bytes.offset, bytes.length);
        while (whole.hasRemaining()) {
          channel.write(whole);
        }
        return;
      }
      room(bytes.length);
      buffer.put(bytes.bytes, bytes.offset, bytes.length);
    }

    private void flush() throws IOException {
      buffer.flip();
      while (buffer.hasRemaining()) {
        channel.write(buffer);
      }
      buffer.clear();
    }

    @Override
    public void close() throws IOException {
      flush();
      channel.close();
    }
  }
}
